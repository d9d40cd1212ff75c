// The chat template: how /v1/chat/completions turns a list of messages into
// the one text GPT-2 continues (docs/openai.md, "The chat template").
//
// GPT-2 is a base model: it has no chat format of its own, so the server
// applies a plain one, or the one in --chat-template FILE. A template is not
// a template engine: it is five kinds of lines, each a key and a quoted
// string, with one placeholder.
//
//   # a comment (a line whose first non-blank byte is '#'); blank lines are skipped
//   system     = "{content}\n\n"          required: a system (or developer) message
//   user       = "User: {content}\n"      required: a user message
//   assistant  = "Assistant: {content}\n" required: an earlier assistant message
//   generation = "Assistant:"             required: appended last; the model continues it
//   stop       = "\nUser:"                optional, up to kMaxTemplateStops lines:
//                                         stop strings added to the request's own
//
// A string is in double quotes with the escapes \n \t \r \" \\ (nothing
// else follows a backslash); `{content}` is the message's text, exactly
// once in system, user and assistant and never in generation or stop; a
// literal brace is `{{` or `}}`. The plain template is the example above.
// Rendering concatenates, for each message in order, its role's string with
// {content} replaced by the message's text, then `generation`.
//
// Errors: Parse names the line (1-based) and the byte offset (0-based, from
// the start of the text) of the first problem: an unknown or repeated key,
// a missing '=', an unterminated string or escape, a stray brace or
// placeholder, text after the closing quote, a missing required key, a
// stop string that is empty or over kMaxTemplateStopBytes.
//
// Threads: a ChatTemplate is immutable after Parse (any thread may render).
// Memory: the strings of the file (at most kMaxTemplateBytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tw::openai {

inline constexpr size_t kMaxTemplateBytes = 64 * 1024;
inline constexpr size_t kMaxTemplateStops = 4;
inline constexpr size_t kMaxTemplateStopBytes = 64;

enum class ChatRole { kSystem, kUser, kAssistant };

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
};

class ChatTemplate {
 public:
  // The built-in template (the example above); its name() is "plain".
  static ChatTemplate Plain();
  // Parses a template's text. On error, the message starts "line L, byte B: ".
  static Status Parse(std::string_view text, ChatTemplate* out);
  // Reads and parses FILE; the error names the file (and the line and byte).
  // name() becomes "file".
  static Status Load(const std::string& path, ChatTemplate* out);

  // The text the model continues.
  std::string Render(const std::vector<ChatMessage>& messages) const;
  // Stop strings every chat request gets (merged with its own `stop`).
  const std::vector<std::string>& stop() const { return stop_; }
  // "plain" or "file" (GET /v1/models says which).
  const std::string& name() const { return name_; }

 private:
  // A role's string around its placeholder: before + content + after.
  struct Part {
    std::string before, after;
  };
  Part system_, user_, assistant_;
  std::string generation_;
  std::vector<std::string> stop_;
  std::string name_ = "plain";
};

}  // namespace tw::openai
