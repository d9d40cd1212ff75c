#include "app/log_json.h"

#include "json/json.h"

namespace tw::app {

void FormatLogJson(const LogRecord& r, std::string* out) {
  std::string ts;
  AppendLogTimestamp(r.unix_ms, &ts);
  json::Writer w(out);
  w.BeginObject();
  w.Key("ts");
  w.String(ts);
  w.Key("level");
  w.String(LogLevelName(r.level));
  w.Key("event");
  w.String(r.event);
  for (size_t k = 0; k < r.n_fields; k++) {
    const LogField& f = r.fields[k];
    if (f.kind == LogField::Kind::kNone) continue;
    w.Key(f.key);
    switch (f.kind) {
      case LogField::Kind::kNone: break;
      case LogField::Kind::kString: w.String(f.str); break;
      case LogField::Kind::kInt: w.Int(f.i); break;
      case LogField::Kind::kDouble: w.Double(f.d); break;
      case LogField::Kind::kBool: w.Bool(f.b); break;
    }
  }
  w.EndObject();
  out->push_back('\n');
}

}  // namespace tw::app
