// TEMPORARY (uncommitted): stubs until the front ends are merged.
#include "grammar/json_schema.h"
namespace tw::grammar {
Status JsonSchemaGrammar(const json::Value&, const JsonSchemaOptions&, const GrammarLimits&, Grammar*) { return Status::Error("schema: not built yet"); }
Status JsonObjectGrammar(const JsonSchemaOptions&, const GrammarLimits&, Grammar*) { return Status::Error("schema: not built yet"); }
}
