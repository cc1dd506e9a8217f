// Typed reads of a run config's keys, each checked against what core/schemas/run-config.schema.json
// says of that key (its type, minimum, maximum, exclusive bounds): the schema embedded at build
// time is the one source of ranges, for the runtime as for the language server and the CLIs.
//
// Integers are read exactly: a JSON number is compared with the key's range before it is
// converted, so 4294967300 is refused as "must be <= 65536, got 4294967300" instead of becoming 4
// by truncation. The range also includes the C++ type's own (an int key whose schema had no
// maximum still could not wrap); a schema maximum the type cannot hold is a bug the tests catch.
#pragma once
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/problem.h"

namespace fsdp {

/** The bounds the schema gives a key: a value v is within them when every present bound holds. */
struct SchemaBounds {
  bool has_min = false, has_max = false, exclusive_min = false, exclusive_max = false;
  double min = 0, max = 0;
};

/** The definition a node refers to ("$ref": "#/definitions/X"), or the node itself. */
const nlohmann::json& schema_deref(const nlohmann::json& schema, const nlohmann::json& node);
/** The schema node of a dotted key (e.g. "training.max_steps", through $ref), or nullptr. */
const nlohmann::json* schema_node(const nlohmann::json& schema, const std::string& path);
/** The bounds of a schema node (its own, else those of the definition it refers to). */
SchemaBounds schema_bounds(const nlohmann::json& schema, const nlohmann::json* node);

/**
 * Whether a key's condition (x-only-when / x-required-when: {"architecture": ["llama", "qwen3"]})
 * holds in `value`, the object `object_schema` describes: the sibling's value, or its default where
 * absent, is one of the listed values. No condition: true.
 */
bool schema_condition_holds(const nlohmann::json& schema, const nlohmann::json& object_schema,
                            const nlohmann::json& value, const nlohmann::json* condition);

/**
 * The schema's rules between keys, as core/config/schema-cross-keys.ts reads them for the editor
 * and fsdp-train (one statement, in the schema; see there why): a key given where its x-only-when
 * does not hold, a key missing where its x-required-when holds, and each object's x-checks
 * (`key` divides `divides`, or is less than `lessThan`, unless `unless` is given). Values of the
 * wrong type are left to the typed reads.
 */
void check_cross_keys(const nlohmann::json& schema, const nlohmann::json& value, std::vector<ConfigProblem>& problems);

/** Reads typed values, recording a problem (and returning a fallback) when a key is missing, mistyped or out of range.
 */
class SchemaReader {
 public:
  SchemaReader(const nlohmann::json& schema, const nlohmann::json& root, std::vector<ConfigProblem>& problems)
      : schema_(schema), root_(root), problems_(problems) {}

  const nlohmann::json* find(const std::string& path) const;
  bool has(const std::string& path) const { return find(path) != nullptr; }

  /** An integer within the schema's bounds for `path` and within Int's range. */
  template <class Int>
  Int integer(const std::string& path) {
    static_assert(std::numeric_limits<Int>::is_integer && sizeof(Int) <= 4,
                  "read wider integers with a type whose range doubles hold exactly");
    long long value = 0;
    read_integer(path, std::numeric_limits<Int>::min(), std::numeric_limits<Int>::max(), value);
    return static_cast<Int>(value);  // within Int's range: checked by read_integer
  }

  /** A finite number within the schema's bounds for `path`. */
  double number(const std::string& path, double fallback = 0);
  bool boolean(const std::string& path, bool fallback = false);
  std::string string(const std::string& path, const std::string& fallback = "");
  std::string one_of(const std::string& path, const std::vector<std::string>& allowed);

  /** Records a problem at `path` when `v` is outside `bounds` ("must be <= 65536, got 4294967300"); returns whether it
   * is within. */
  bool within(const std::string& path, const nlohmann::json& v, const SchemaBounds& bounds);

 private:
  /** Sets `out` and returns true when `path` holds an integer within the schema's bounds and [lo, hi]. */
  bool read_integer(const std::string& path, long long lo, long long hi, long long& out);
  void missing(const std::string& path);
  void wrong(const std::string& path, const char* expected, const nlohmann::json& v);

  const nlohmann::json& schema_;
  const nlohmann::json& root_;
  std::vector<ConfigProblem>& problems_;
};

}  // namespace fsdp
