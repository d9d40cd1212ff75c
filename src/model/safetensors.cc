#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "json/json.h"

namespace tw::model {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; TokenWire reads it in place");

namespace {

struct DtypeEntry {
  Dtype dtype;
  std::string_view name;
  size_t size;
};

constexpr DtypeEntry kDtypes[] = {
    {Dtype::kBool, "BOOL", 1},   {Dtype::kU8, "U8", 1},     {Dtype::kI8, "I8", 1},
    {Dtype::kF8_E5M2, "F8_E5M2", 1}, {Dtype::kF8_E4M3, "F8_E4M3", 1},
    {Dtype::kI16, "I16", 2},     {Dtype::kU16, "U16", 2},   {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2},   {Dtype::kI32, "I32", 4},   {Dtype::kU32, "U32", 4},
    {Dtype::kF32, "F32", 4},     {Dtype::kF64, "F64", 8},   {Dtype::kI64, "I64", 8},
    {Dtype::kU64, "U64", 8},
};

const DtypeEntry& Entry(Dtype d) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.dtype == d) return e;
  }
  return kDtypes[0];  // unreachable: every enumerator is in the table
}

// "'file': tensor 'name': " prefix for messages.
std::string Where(std::string_view label, std::string_view tensor) {
  std::string s = "safetensors '";
  s += label;
  s += "'";
  if (!tensor.empty()) {
    s += ": tensor '";
    s += tensor;
    s += "'";
  }
  s += ": ";
  return s;
}

// Reads a non-negative JSON integer.
bool NonNegativeInt(const json::Value& v, uint64_t* out) {
  if (!v.is_int() || v.as_int() < 0) return false;
  *out = static_cast<uint64_t>(v.as_int());
  return true;
}

std::string KindName(const json::Value& v) {
  switch (v.kind()) {
    case json::Value::Kind::kNull: return "null";
    case json::Value::Kind::kBool: return "a boolean";
    case json::Value::Kind::kInt: return "the integer " + std::to_string(v.as_int());
    case json::Value::Kind::kDouble: return "a non-integer number";
    case json::Value::Kind::kString: return "a string";
    case json::Value::Kind::kArray: return "an array";
    case json::Value::Kind::kObject: return "an object";
  }
  return "?";
}

Status ParseTensor(std::string_view label, const std::string& name, const json::Value& v,
                   uint64_t data_bytes, const SafetensorsLimits& limits, TensorInfo* t) {
  const std::string where = Where(label, name);
  if (!v.is_object()) return Status::Error(where + "expected an object, found " + KindName(v));
  t->name = name;
  for (const json::Value::Member& m : v.members()) {
    if (m.first != "dtype" && m.first != "shape" && m.first != "data_offsets") {
      return Status::Error(where + "unknown field '" + m.first +
                           "' (expected dtype, shape, data_offsets)");
    }
  }

  const json::Value* dtype = v.Find("dtype");
  if (dtype == nullptr) return Status::Error(where + "missing field 'dtype'");
  if (!dtype->is_string()) {
    return Status::Error(where + "'dtype' must be a string, found " + KindName(*dtype));
  }
  if (!ParseDtype(dtype->as_string(), &t->dtype)) {
    std::string m = where + "unknown dtype '" + dtype->as_string() + "' (known:";
    for (const DtypeEntry& e : kDtypes) {
      m += " ";
      m += e.name;
    }
    return Status::Error(m + ")");
  }

  const json::Value* shape = v.Find("shape");
  if (shape == nullptr) return Status::Error(where + "missing field 'shape'");
  if (!shape->is_array()) {
    return Status::Error(where + "'shape' must be an array, found " + KindName(*shape));
  }
  if (shape->items().size() > limits.max_rank) {
    return Status::Error(where + "shape has " + std::to_string(shape->items().size()) +
                         " dimensions, more than max_rank " + std::to_string(limits.max_rank));
  }
  uint64_t numel = 1;
  bool overflow = false, has_zero = false;
  for (size_t i = 0; i < shape->items().size(); i++) {
    uint64_t d = 0;
    if (!NonNegativeInt(shape->items()[i], &d)) {
      return Status::Error(where + "shape[" + std::to_string(i) +
                           "] must be a non-negative integer, found " +
                           KindName(shape->items()[i]));
    }
    t->shape.push_back(static_cast<int64_t>(d));
    if (d == 0) has_zero = true;  // an empty tensor, whatever the other dimensions
    if (d != 0 && numel > UINT64_MAX / d) overflow = true;
    numel *= d;
  }
  if (has_zero) {
    overflow = false;
    numel = 0;
  }
  const size_t elem = DtypeSize(t->dtype);
  if (overflow || numel > UINT64_MAX / elem) {
    return Status::Error(where + "shape " + ShapeToString(t->shape) +
                         " overflows 64 bits in element count or bytes");
  }
  t->numel = numel;

  const json::Value* offs = v.Find("data_offsets");
  if (offs == nullptr) return Status::Error(where + "missing field 'data_offsets'");
  if (!offs->is_array() || offs->items().size() != 2 ||
      !NonNegativeInt(offs->items()[0], &t->data_begin) ||
      !NonNegativeInt(offs->items()[1], &t->data_end)) {
    return Status::Error(where + "'data_offsets' must be [begin, end] of non-negative integers");
  }
  if (t->data_end < t->data_begin) {
    return Status::Error(where + "data_offsets [" + std::to_string(t->data_begin) + ", " +
                         std::to_string(t->data_end) + "] end before begin");
  }
  if (t->data_end > data_bytes) {
    return Status::Error(where + "data_offsets [" + std::to_string(t->data_begin) + ", " +
                         std::to_string(t->data_end) + "] out of range: the data section has " +
                         std::to_string(data_bytes) + " bytes");
  }
  const uint64_t want = numel * elem;
  if (t->data_end - t->data_begin != want) {
    return Status::Error(where + "size mismatch: shape " + ShapeToString(t->shape) + " " +
                         std::string(DtypeName(t->dtype)) + " needs " + std::to_string(want) +
                         " bytes, data_offsets [" + std::to_string(t->data_begin) + ", " +
                         std::to_string(t->data_end) + "] hold " +
                         std::to_string(t->data_end - t->data_begin));
  }
  return Status::Ok();
}

}  // namespace

std::string_view DtypeName(Dtype d) { return Entry(d).name; }
size_t DtypeSize(Dtype d) { return Entry(d).size; }

bool ParseDtype(std::string_view name, Dtype* out) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.name == name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

const TensorInfo* SafetensorsHeader::Find(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Status ParseSafetensors(std::string_view file, std::string_view label, SafetensorsHeader* out,
                        const SafetensorsLimits& limits) {
  const std::string where = Where(label, "");
  *out = SafetensorsHeader();
  if (file.size() < 8) {
    return Status::Error(where + "file is " + std::to_string(file.size()) +
                         " bytes, too short for the 8-byte header length");
  }
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);  // little-endian on disk; host checked above
  if (n > limits.max_header_bytes) {
    return Status::Error(where + "header length " + std::to_string(n) +
                         " bytes is over max_header_bytes " +
                         std::to_string(limits.max_header_bytes));
  }
  if (n > file.size() - 8) {
    return Status::Error(where + "header length " + std::to_string(n) +
                         " bytes runs past the end of the file (" + std::to_string(file.size()) +
                         " bytes, so at most " + std::to_string(file.size() - 8) + ")");
  }
  out->header_bytes = n;
  out->data_offset = 8 + n;
  out->data_bytes = file.size() - out->data_offset;

  std::string_view text = file.substr(8, n);
  if (text.empty() || text[0] != '{') {
    return Status::Error(where + "header does not start with '{' (byte offset 8)");
  }
  json::Value root;
  json::ParseLimits jl;
  jl.max_bytes = static_cast<size_t>(limits.max_header_bytes);
  jl.max_depth = limits.max_json_depth;
  size_t err_off = 0;
  Status st = json::Parse(text, &root, jl, &err_off);
  if (!st.ok()) {
    return Status::Error(where + "header is not valid JSON at file byte offset " +
                         std::to_string(8 + err_off) + ": " + st.message());
  }
  if (!root.is_object()) return Status::Error(where + "header is not a JSON object");

  for (const json::Value::Member& m : root.members()) {
    if (m.first == "__metadata__") {
      if (!out->metadata.empty()) return Status::Error(where + "'__metadata__' appears twice");
      if (!m.second.is_object()) {
        return Status::Error(where + "'__metadata__' must be an object, found " +
                             KindName(m.second));
      }
      for (const json::Value::Member& kv : m.second.members()) {
        if (!kv.second.is_string()) {
          return Status::Error(where + "'__metadata__' value for '" + kv.first +
                               "' must be a string, found " + KindName(kv.second));
        }
        out->metadata.emplace_back(kv.first, kv.second.as_string());
      }
      continue;
    }
    TensorInfo t;
    st = ParseTensor(label, m.first, m.second, out->data_bytes, limits, &t);
    if (!st.ok()) return st;
    out->tensors.push_back(std::move(t));
  }

  // Duplicate names, then the tiling rule: sorted by (begin, end), each tensor
  // starts where the previous one ended and the last ends at the section's end.
  std::vector<const TensorInfo*> order;
  order.reserve(out->tensors.size());
  for (const TensorInfo& t : out->tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->name < b->name;
  });
  for (size_t i = 1; i < order.size(); i++) {
    if (order[i]->name == order[i - 1]->name) {
      return Status::Error(Where(label, order[i]->name) + "appears twice in the header");
    }
  }
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    if (a->data_begin != b->data_begin) return a->data_begin < b->data_begin;
    return a->data_end < b->data_end;
  });
  uint64_t pos = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : order) {
    if (t->data_begin < pos) {
      return Status::Error(Where(label, t->name) + "data_offsets [" +
                           std::to_string(t->data_begin) + ", " + std::to_string(t->data_end) +
                           "] overlap tensor '" + prev->name + "' [" +
                           std::to_string(prev->data_begin) + ", " +
                           std::to_string(prev->data_end) + "]");
    }
    if (t->data_begin > pos) {
      return Status::Error(Where(label, t->name) + "data begins at " +
                           std::to_string(t->data_begin) + " but the previous tensor ends at " +
                           std::to_string(pos) + ": a " + std::to_string(t->data_begin - pos) +
                           "-byte hole in the data section");
    }
    pos = t->data_end;
    prev = t;
  }
  if (pos != out->data_bytes) {
    return Status::Error(where + "tensors end at data byte " + std::to_string(pos) +
                         " but the data section has " + std::to_string(out->data_bytes) +
                         " bytes (" +
                         (pos < out->data_bytes ? "trailing bytes" : "file truncated") + ")");
  }
  return Status::Ok();
}

std::string EncodeSafetensorsHeader(
    std::span<const TensorInfo> tensors,
    std::span<const std::pair<std::string, std::string>> metadata) {
  std::string j;
  json::Writer w(&j);
  w.BeginObject();
  if (!metadata.empty()) {
    w.Key("__metadata__");
    w.BeginObject();
    for (const auto& kv : metadata) {
      w.Key(kv.first);
      w.String(kv.second);
    }
    w.EndObject();
  }
  for (const TensorInfo& t : tensors) {
    w.Key(t.name);
    w.BeginObject();
    w.Key("dtype");
    w.String(DtypeName(t.dtype));
    w.Key("shape");
    w.BeginArray();
    for (int64_t d : t.shape) w.Int(d);
    w.EndArray();
    w.Key("data_offsets");
    w.BeginArray();
    w.Int(static_cast<int64_t>(t.data_begin));
    w.Int(static_cast<int64_t>(t.data_end));
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  while ((8 + j.size()) % 8 != 0) j += ' ';
  const uint64_t n = j.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + j;
}

Status SafetensorsFile::Open(const std::string& path, std::unique_ptr<SafetensorsFile>* out,
                             const SafetensorsLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open('" + path + "')");
  struct stat sb;
  if (::fstat(fd, &sb) != 0) {
    Status st = Status::FromErrno("fstat('" + path + "')");
    ::close(fd);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    return Status::Error("safetensors '" + path + "': not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  if (size < 8) {
    ::close(fd);
    return Status::Error("safetensors '" + path + "': file is " + std::to_string(size) +
                         " bytes, too short for the 8-byte header length");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  Status mst = p == MAP_FAILED ? Status::FromErrno("mmap('" + path + "')") : Status::Ok();
  ::close(fd);  // the mapping keeps the file alive
  if (!mst.ok()) return mst;

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->base_ = static_cast<const uint8_t*>(p);
  f->size_ = size;
  std::string_view bytes(reinterpret_cast<const char*>(f->base_), size);
  Status st = ParseSafetensors(bytes, path, &f->header_, limits);
  if (!st.ok()) return st;  // ~SafetensorsFile unmaps
  *out = std::move(f);
  return Status::Ok();
}

SafetensorsFile::~SafetensorsFile() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
}

std::span<const uint8_t> SafetensorsFile::TensorData(const TensorInfo& t) const {
  return {base_ + header_.data_offset + t.data_begin, t.byte_size()};
}

}  // namespace tw::model
