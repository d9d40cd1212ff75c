// OpenAiEndpoints: the handlers of OpenAI's API (docs/openai.md).
//
//   POST /v1/completions        legacy completions (openai/completions.h)
//   POST /v1/chat/completions   chat, through the chat template (openai/chat.h)
//   GET  /v1/models, /v1/models/{id}   the one served model
//
// A request is parsed and tokenized off the loop (service::Service::Prepare),
// mapped onto our typed generation request, and launched as one stream per
// choice (`n`; choice i draws with seed + i), so the policies, bounds,
// metrics and cancellation on disconnect are those of /v1/stream. The n
// streams answer as one response (openai/openai_response.h: OpenAiChoices),
// streamed as `data: {chunk}` lines or collected into one JSON object.
// Refusals are OpenAI's error objects, before the first byte. Fields a
// request holds that this server does not know are accepted (unless
// --strict-request-fields): each such request logs one warn record,
// `openai_unknown_fields`, naming them, and they are counted
// (tokenwire_openai_unknown_fields_total).
//
// The handlers reach the server only through service::Service (prepare,
// launch, attach); the app routes requests to them (app/app.cc, AddRoutes)
// after its own checks (the API key).
//
// Threads: I/O thread (the parsers run on prep threads).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"

#include "http/server.h"
#include "openai/chat_template.h"
#include "openai/completions.h"
#include "service/service.h"

namespace tw::openai {

class OpenAiEndpoints {
 public:
  // `service`, `log` and `unknown_fields` outlive this object; `log` may be
  // null (nothing is logged), `unknown_fields` too (nothing is counted).
  OpenAiEndpoints(service::Service* service, ChatTemplate chat_template, Logger* log = nullptr,
                  Counter* unknown_fields = nullptr);

  void HandleCompletions(const http::Request& req, http::Responder r);      // POST /v1/completions
  void HandleChatCompletions(const http::Request& req, http::Responder r);  // POST /v1/chat/completions
  void HandleModels(const http::Request& req, http::Responder r);           // GET /v1/models
  void HandleModel(const http::Request& req, http::Responder r);            // GET /v1/models/{id}

 private:
  // Launches the request's n choices (one stream each) and answers them as
  // one response; refuses them all if one is refused.
  void Launch(OpenAiLaunch l, http::Responder r);
  void Refuse(http::Responder& r, const ApiError& e);
  // One warn record naming the unknown fields a parsed request held, and the count.
  void NoteUnknownFields(std::string_view path, const std::vector<std::string>& fields);

  service::Service* service_;
  Logger* const log_;               // thread-safe; called from prep threads
  Counter* const unknown_fields_;   // tokenwire_openai_unknown_fields_total
  const ChatTemplate chat_template_;  // read by prep threads: never changes
  // OpenAI's "created" of the served model (GET /v1/models): when the server started.
  const int64_t created_unix_s_;
};

}  // namespace tw::openai
