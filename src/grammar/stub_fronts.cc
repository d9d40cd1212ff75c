// TEMPORARY (uncommitted): stubs until the front ends are merged.
#include "grammar/json_schema.h"
#include "grammar/regex.h"
namespace tw::grammar {
Status AddRegex(std::string_view, const RegexOptions&, Grammar*, std::string_view, Element*) { return Status::Error("regex: not built yet"); }
Status RegexGrammar(std::string_view, const GrammarLimits&, Grammar*) { return Status::Error("regex: not built yet"); }
Status JsonSchemaGrammar(const json::Value&, const JsonSchemaOptions&, const GrammarLimits&, Grammar*) { return Status::Error("schema: not built yet"); }
Status JsonObjectGrammar(const JsonSchemaOptions&, const GrammarLimits&, Grammar*) { return Status::Error("schema: not built yet"); }
}
