#include "config/schema_reader.h"

#include <cmath>
#include <cstdint>
#include <sstream>

namespace fsdp {

using nlohmann::json;

namespace {

// Every JSON integer (int64 or uint64) and every double compare exactly as long double (64-bit
// mantissa on x86-64 and AArch64 Linux).
long double exact(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
  return static_cast<long double>(v.get<double>());
}

/** A bound as the language server writes it: 65536, 0.5. */
std::string bound_text(double b) {
  if (b == std::floor(b) && std::fabs(b) < 1e15) return std::to_string(static_cast<long long>(b));
  std::ostringstream s;
  s.precision(17);
  s << b;
  return s.str();
}

}  // namespace

const json& schema_deref(const json& schema, const json& node) {
  if (node.contains("$ref")) {
    const std::string ref = node["$ref"];
    const std::string prefix = "#/definitions/";
    return schema.at("definitions").at(ref.substr(prefix.size()));
  }
  return node;
}

const json* schema_node(const json& schema, const std::string& path) {
  const json* node = &schema;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const json& s = schema_deref(schema, *node);
    if (!s.contains("properties") || !s["properties"].contains(key)) return nullptr;
    node = &s["properties"][key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node;
}

SchemaBounds schema_bounds(const json& schema, const json* node) {
  SchemaBounds b;
  if (!node) return b;
  for (const json* s : {node, &schema_deref(schema, *node)}) {
    if (!b.has_min && s->contains("minimum")) b.has_min = true, b.min = (*s)["minimum"].get<double>();
    if (!b.has_min && s->contains("exclusiveMinimum"))
      b.has_min = b.exclusive_min = true, b.min = (*s)["exclusiveMinimum"].get<double>();
    if (!b.has_max && s->contains("maximum")) b.has_max = true, b.max = (*s)["maximum"].get<double>();
    if (!b.has_max && s->contains("exclusiveMaximum"))
      b.has_max = b.exclusive_max = true, b.max = (*s)["exclusiveMaximum"].get<double>();
  }
  return b;
}

namespace {

/** A key's value in an object, or the schema's default for it; nullptr when neither. */
const json* value_or_default(const json& schema, const json& object_schema, const json& value, const std::string& key) {
  if (value.is_object() && value.contains(key)) return &value[key];
  if (!object_schema.contains("properties") || !object_schema["properties"].contains(key)) return nullptr;
  const json& prop = object_schema["properties"][key];
  if (prop.contains("default")) return &prop["default"];
  const json& target = schema_deref(schema, prop);
  return target.contains("default") ? &target["default"] : nullptr;
}

/** A property's annotation, its own or its definition's (as core/config/schema-walk.ts resolve merges them). */
const json* annotation(const json& schema, const json& prop, const char* name) {
  if (prop.contains(name)) return &prop[name];
  const json& target = schema_deref(schema, prop);
  return target.contains(name) ? &target[name] : nullptr;
}

std::string join_path(const std::string& at, const std::string& key) {
  return at.empty() ? key : at + "." + key;
}

/** "model.architecture llama or qwen3" */
std::string describe_condition(const json& condition, const std::string& at) {
  std::string out;
  for (const auto& [key, values] : condition.items()) {
    if (!out.empty()) out += " and ";
    out += join_path(at, key) + " ";
    bool first = true;
    for (const json& v : values)
      out += (first ? "" : " or ") + (v.is_string() ? v.get<std::string>() : v.dump()), first = false;
  }
  return out;
}

/** "gpt2" or "gpt2 (the default)" */
std::string describe_actual(const json& schema, const json& object_schema, const json& value, const json& condition) {
  std::string out;
  for (const auto& [key, values] : condition.items()) {
    const json* v = value_or_default(schema, object_schema, value, key);
    if (!out.empty()) out += ", ";
    out += v ? (v->is_string() ? v->get<std::string>() : v->dump()) : "absent";
    if (!value.contains(key)) out += " (the default)";
  }
  return out;
}

/** An integer the JSON holds exactly, as the number it is (x-checks compare whole values). */
bool exact_integer(const json& v, long double& out) {
  if (!v.is_number()) return false;
  out = exact(v);
  return std::isfinite(static_cast<double>(out)) && out == std::floor(out);
}

void check_object(const json& schema, const json& node, const json& value, const std::string& at,
                  std::vector<ConfigProblem>& problems) {
  const json& s = schema_deref(schema, node);
  if (!s.contains("properties") || !value.is_object()) return;
  for (const auto& [key, prop] : s["properties"].items()) {
    const std::string path = join_path(at, key);
    const bool given = value.contains(key);
    const json* only = annotation(schema, prop, "x-only-when");
    const json* required = annotation(schema, prop, "x-required-when");
    if (given && !schema_condition_holds(schema, s, value, only)) {
      problems.push_back(
          {path, "only for " + describe_condition(*only, at) + ", not " + describe_actual(schema, s, value, *only)});
    } else if (!given && required && schema_condition_holds(schema, s, value, required)) {
      problems.push_back({path, "is missing (" + describe_condition(*required, at) + ")"});
    }
    if (given) check_object(schema, prop, value[key], path, problems);
  }
  if (!s.contains("x-checks")) return;
  for (const json& check : s["x-checks"]) {
    const std::string key = check.at("key");
    if (check.contains("unless") && value.contains(check["unless"].get<std::string>())) continue;
    const bool divides = check.contains("divides");
    const std::string other = check.value(divides ? "divides" : "lessThan", "");
    // The runtime fills a missing key with its default, required or not (apply_defaults), so the
    // rule holds for the values it will use; the editor reports a missing required key instead.
    const json* a = value_or_default(schema, s, value, key);
    const json* b = value_or_default(schema, s, value, other);
    if (!a || !b || !a->is_number() || !b->is_number()) continue;
    const std::string where = join_path(at, other);
    std::string broken;
    long double x = 0, y = 0;
    if (divides && exact_integer(*a, x) && exact_integer(*b, y) && x >= 1 && std::fmod(y, x) != 0)
      broken = a->dump() + " does not divide " + where + " (" + b->dump() + ")";
    else if (!divides && !(exact(*a) < exact(*b)))
      broken = a->dump() + " is not less than " + where + " (" + b->dump() + ")";
    if (!broken.empty()) problems.push_back({join_path(at, key), broken + ": " + check.value("why", "")});
  }
}

}  // namespace

bool schema_condition_holds(const json& schema, const json& object_schema, const json& value, const json* condition) {
  if (!condition) return true;
  for (const auto& [key, values] : condition->items()) {
    const json* v = value_or_default(schema, object_schema, value, key);
    bool listed = false;
    for (const json& allowed : values) listed = listed || (v && *v == allowed);
    if (!listed) return false;
  }
  return true;
}

void check_cross_keys(const json& schema, const json& value, std::vector<ConfigProblem>& problems) {
  check_object(schema, schema, value, "", problems);
}

const json* SchemaReader::find(const std::string& path) const {
  const json* cur = &root_;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

bool SchemaReader::within(const std::string& path, const json& v, const SchemaBounds& b) {
  const long double x = exact(v);
  const char* op = nullptr;
  double bound = 0;
  if (b.has_min && (b.exclusive_min ? x <= b.min : x < b.min))
    op = b.exclusive_min ? ">" : ">=", bound = b.min;
  else if (b.has_max && (b.exclusive_max ? x >= b.max : x > b.max))
    op = b.exclusive_max ? "<" : "<=", bound = b.max;
  if (!op) return true;
  problems_.push_back({path, std::string("must be ") + op + " " + bound_text(bound) + ", got " + v.dump()});
  return false;
}

bool SchemaReader::read_integer(const std::string& path, long long lo, long long hi, long long& out) {
  out = lo > 0 ? lo : hi < 0 ? hi : 0;  // the fallback when the key is refused (the config is then not used)
  const json* v = find(path);
  if (!v) return missing(path), false;
  const bool integral = v->is_number_integer() || (v->is_number_float() && std::isfinite(v->get<double>()) &&
                                                   v->get<double>() == std::floor(v->get<double>()));
  if (!integral) return wrong(path, "an integer", *v), false;
  SchemaBounds b = schema_bounds(schema_, schema_node(schema_, path));
  // The C++ type's range, where the schema's is wider or absent (lo and hi are exact as doubles: 32-bit types).
  if (!b.has_min || b.min < static_cast<double>(lo))
    b.has_min = true, b.exclusive_min = false, b.min = static_cast<double>(lo);
  if (!b.has_max || b.max > static_cast<double>(hi))
    b.has_max = true, b.exclusive_max = false, b.max = static_cast<double>(hi);
  if (!within(path, *v, b)) return false;
  out = static_cast<long long>(exact(*v));  // within [lo, hi] by now
  return true;
}

double SchemaReader::number(const std::string& path, double fallback) {
  const json* v = find(path);
  if (!v) return missing(path), fallback;
  if (!v->is_number()) return wrong(path, "a number", *v), fallback;
  if (!within(path, *v, schema_bounds(schema_, schema_node(schema_, path)))) return fallback;
  return v->get<double>();
}

bool SchemaReader::boolean(const std::string& path, bool fallback) {
  const json* v = find(path);
  if (!v) return missing(path), fallback;
  if (!v->is_boolean()) return wrong(path, "true or false", *v), fallback;
  return v->get<bool>();
}

std::string SchemaReader::string(const std::string& path, const std::string& fallback) {
  const json* v = find(path);
  if (!v) return missing(path), fallback;
  if (!v->is_string()) return wrong(path, "a string", *v), fallback;
  return v->get<std::string>();
}

std::string SchemaReader::one_of(const std::string& path, const std::vector<std::string>& allowed) {
  const std::string s = string(path, allowed.front());
  for (const auto& a : allowed)
    if (s == a) return s;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  problems_.push_back({path, "\"" + s + "\" is not one of " + list});
  return allowed.front();
}

void SchemaReader::missing(const std::string& path) {
  problems_.push_back({path, "is missing"});
}

void SchemaReader::wrong(const std::string& path, const char* expected, const json& v) {
  problems_.push_back({path, std::string("expected ") + expected + ", got " + v.dump()});
}

}  // namespace fsdp
