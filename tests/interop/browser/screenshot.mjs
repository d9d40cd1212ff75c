// Loads the page with a scripted scenario, waits until the stream is past a
// resume and the metrics panel has been filled (a number in its first row), and writes a PNG of the page
// mid-stream (Page.captureScreenshot).
//   node screenshot.mjs URL OUT.png MIN_EVENTS
import {writeFileSync} from "node:fs";
import {Browser} from "./cdp.mjs";

const [url, out, minEvents] = process.argv.slice(2);
const browser = await Browser.launch({width: 1280, height: 1000});
try {
  const page = await browser.open(url);
  await page.waitFor(`document.querySelectorAll("#events tbody tr").length > 0 &&
    document.querySelectorAll("#text span:not(.resume-mark)").length >= ${Number(minEvents)} &&
    document.querySelector("#metric_list dd") && /^[0-9]+$/.test(document.querySelector("#metric_list dd").textContent)`, 20000);
  const png = await page.screenshot();
  writeFileSync(out, png);
  console.log(`wrote ${out} (${png.length} bytes) while the page showed: ` +
              await page.eval(`document.getElementById("check").textContent`));
} finally {
  await browser.close();
}
