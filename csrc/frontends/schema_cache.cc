#include "frontends/schema_cache.h"

#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace xgr2 {
namespace {

constexpr size_t kMaxEntries = 4096;
constexpr size_t kMaxKeyBytes = 32 << 20;  // schema texts kept as keys

}  // namespace

std::string OptionsKey(const JsonSchemaOptions& o) {
  std::string key = std::to_string(o.any_whitespace) + "," + std::to_string(o.indent) + "," +
                    std::to_string(o.has_separators) + "," + std::to_string(o.item_separator.size()) + ":" +
                    o.item_separator + "," + std::to_string(o.key_separator.size()) + ":" + o.key_separator + "," +
                    std::to_string(o.strict) + "," + std::to_string(static_cast<int>(o.unsupported)) + "," +
                    std::to_string(o.max_whitespace) + "," + std::to_string(o.any_order) + "," +
                    std::to_string(o.document_space);
  for (const std::string& e : o.excludes) key += "," + std::to_string(e.size()) + ":" + e;
  return key + "|";
}

namespace {

class SchemaCache {
 public:
  bool Find(const std::string& key, JsonSchemaGrammar* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    order_.splice(order_.begin(), order_, it->second);  // most recent first
    *out = it->second->second;
    return true;
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    order_.clear();
    index_.clear();
    bytes_ = 0;
  }

  void Insert(const std::string& key, const JsonSchemaGrammar& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key) || key.size() > kMaxKeyBytes) return;
    order_.emplace_front(key, value);
    index_[key] = order_.begin();
    bytes_ += key.size();
    while (order_.size() > kMaxEntries || bytes_ > kMaxKeyBytes) {
      bytes_ -= order_.back().first.size();
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, JsonSchemaGrammar>> order_;
  std::unordered_map<std::string, std::list<std::pair<std::string, JsonSchemaGrammar>>::iterator> index_;
  size_t bytes_ = 0;
};

SchemaCache& Cache() {
  static SchemaCache* cache = new SchemaCache();  // never destroyed: used until exit
  return *cache;
}

}  // namespace

JsonSchemaGrammar CachedJsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  // With other documents the key would have to hold them all (a registry of megabytes,
  // copied per call, for documents the schema may not even read): compiled afresh.
  if (!options.resources.empty()) return JsonSchemaToGrammar(schema_json, options);
  std::string key = OptionsKey(options) + schema_json;
  JsonSchemaGrammar out;
  if (Cache().Find(key, &out)) return out;
  out = JsonSchemaToGrammar(schema_json, options);
  Cache().Insert(key, out);
  return out;
}

void ClearJsonSchemaCache() { Cache().Clear(); }

}  // namespace xgr2
