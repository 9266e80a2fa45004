#include "eager/nn/Serialize.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>

namespace ember::serialize {

static_assert(std::endian::native == std::endian::little,
              "ember's archive format (Note [Archive file format]) writes "
              "host bytes and assumes a little-endian host");

namespace detail {

/// One key of an archive: a tensor (or buffer), a nested archive or a value.
struct Entry {
  enum Kind : uint8_t { kTensor = 1, kBuffer = 2, kArchive = 3, kValue = 4 };
  Kind kind = kTensor;
  Tensor tensor;
  std::shared_ptr<const ArchiveNode> archive;
  IValue value;
};

struct ArchiveNode {
  OrderedDict<std::string, Entry> entries{"Key"};
};

} // namespace detail

using detail::ArchiveNode;
using detail::Entry;

namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'A', 'R', 'C'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 32;
/// Deeper nesting than this in a file is treated as corruption (and keeps
/// the recursive parser's stack bounded).
constexpr int kMaxDepth = 512;

enum ValueTag : uint8_t {
  kNoneTag = 0,
  kIntTag = 1,
  kDoubleTag = 2,
  kBoolTag = 3,
  kStringTag = 4,
  kIntListTag = 5,
  kDoubleListTag = 6,
  kTensorListTag = 7,
  kScalarTypeTag = 8,
  kDeviceTag = 9,
};

/// ember's archive checksum: FNV-1a over 64-bit little-endian words (the
/// tail byte by byte), with a final avalanche so that the length and every
/// bit of the payload matter. Not cryptographic: it catches truncation and
/// accidental corruption.
uint64_t checksum(const char *data, size_t n) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * kPrime;
    h ^= h >> 29;
  }
  for (; i < n; ++i)
    h = (h ^ uint8_t(data[i])) * kPrime;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

// --- writing
// -------------------------------------------------------------------

class Writer {
public:
  template <class T> void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char *p = reinterpret_cast<const char *>(&v);
    buf_.append(p, sizeof(T));
  }
  void bytes(const void *p, size_t n) {
    buf_.append(static_cast<const char *>(p), n);
  }
  void string(const std::string &s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void tensor(const Tensor &t) {
    pod<uint8_t>(t.defined());
    if (!t.defined())
      return;
    Tensor c = t.detach().to(Device(kCPU)).contiguous();
    string(toTypeName(c.dtype()));
    pod<uint64_t>(uint64_t(c.dim()));
    for (int64_t s : c.sizes())
      pod<int64_t>(s);
    pod<uint64_t>(c.nbytes());
    if (c.nbytes() > 0)
      bytes(c.data_ptr(), c.nbytes());
  }
  void value(const IValue &v) {
    if (v.isNone()) {
      pod<uint8_t>(kNoneTag);
    } else if (v.isInt()) {
      pod<uint8_t>(kIntTag);
      pod<int64_t>(v.toInt());
    } else if (v.isDouble()) {
      pod<uint8_t>(kDoubleTag);
      pod<double>(v.toDouble());
    } else if (v.isBool()) {
      pod<uint8_t>(kBoolTag);
      pod<uint8_t>(v.toBool());
    } else if (v.isString()) {
      pod<uint8_t>(kStringTag);
      string(v.toStringRef());
    } else if (v.isIntList()) {
      pod<uint8_t>(kIntListTag);
      IntArrayRef l = v.toIntList();
      pod<uint64_t>(l.size());
      for (int64_t x : l)
        pod<int64_t>(x);
    } else if (v.isDoubleList()) {
      pod<uint8_t>(kDoubleListTag);
      const auto &l = v.toDoubleList();
      pod<uint64_t>(l.size());
      for (double x : l)
        pod<double>(x);
    } else if (v.isTensorList()) {
      pod<uint8_t>(kTensorListTag);
      const auto &l = v.toTensorList();
      pod<uint64_t>(l.size());
      for (const Tensor &t : l)
        tensor(t);
    } else if (v.isScalarType()) {
      pod<uint8_t>(kScalarTypeTag);
      string(toTypeName(v.toScalarType()));
    } else if (v.isDevice()) {
      pod<uint8_t>(kDeviceTag);
      string(v.toDevice().str());
    } else {
      throw TypeError(ember::detail::str(
          "Cannot serialize a value of type ", v.tagName(),
          " in an archive; supported: None, int, float, bool, str, int[], "
          "float[], Tensor[], ScalarType, Device"));
    }
  }
  void archive(const ArchiveNode &node, int depth = 0) {
    EMBER_CHECK(depth <= kMaxDepth,
                "Cannot save an archive nested deeper "
                "than ",
                kMaxDepth, " levels (does an archive contain itself?)");
    pod<uint64_t>(node.entries.size());
    for (const auto &item : node.entries) {
      string(item.key());
      const Entry &e = item.value();
      pod<uint8_t>(e.kind);
      switch (e.kind) {
      case Entry::kTensor:
      case Entry::kBuffer:
        tensor(e.tensor);
        break;
      case Entry::kArchive:
        archive(*e.archive, depth + 1);
        break;
      case Entry::kValue:
        value(e.value);
        break;
      }
    }
  }
  std::string &buffer() { return buf_; }

private:
  std::string buf_;
};

/// The complete file: header + payload.
std::string encode(const ArchiveNode &root) {
  Writer payload;
  payload.archive(root);
  const std::string &p = payload.buffer();
  Writer file;
  file.bytes(kMagic, sizeof(kMagic));
  file.pod<uint32_t>(kVersion);
  file.pod<uint32_t>(0);
  file.pod<uint64_t>(p.size());
  file.pod<uint64_t>(checksum(p.data(), p.size()));
  file.bytes(p.data(), p.size());
  return std::move(file.buffer());
}

// --- reading
// -------------------------------------------------------------------

ScalarType parse_dtype(const std::string &name) {
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    if (name == toTypeName(t))
      return t;
  }
  throw Error(
      ember::detail::str("Corrupt archive: unknown dtype '", name, "'"));
}

class Reader {
public:
  Reader(const char *data, size_t size, std::optional<Device> device)
      : p_(data), end_(data + size), device_(device) {}

  template <class T> T pod() {
    need(sizeof(T), "a value");
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  /// A count of items that each take at least `min_item_bytes`: checked
  /// against the remaining bytes before anything is allocated.
  uint64_t count(size_t min_item_bytes) {
    uint64_t n = pod<uint64_t>();
    EMBER_CHECK(
        min_item_bytes == 0 || n <= uint64_t(end_ - p_) / min_item_bytes,
        "Corrupt archive: a count of ", n, " items exceeds the remaining data");
    return n;
  }
  std::string string() {
    uint64_t n = pod<uint64_t>();
    need(n, "a string");
    std::string s(p_, size_t(n));
    p_ += n;
    return s;
  }
  Tensor tensor() {
    uint8_t defined = pod<uint8_t>();
    EMBER_CHECK(defined <= 1, "Corrupt archive: bad tensor flag ",
                int(defined));
    if (!defined)
      return Tensor();
    ScalarType dtype = parse_dtype(string());
    uint64_t ndim = pod<uint64_t>();
    EMBER_CHECK(ndim <= 64, "Corrupt archive: tensor with ", ndim,
                " dimensions");
    std::vector<int64_t> sizes(static_cast<size_t>(ndim));
    int64_t numel = 1;
    for (auto &s : sizes) {
      s = pod<int64_t>();
      EMBER_CHECK(s >= 0, "Corrupt archive: negative tensor size ", s);
      EMBER_CHECK(!__builtin_mul_overflow(numel, s, &numel),
                  "Corrupt archive: tensor size overflows");
    }
    uint64_t nbytes = pod<uint64_t>();
    uint64_t expected = 0;
    EMBER_CHECK(!__builtin_mul_overflow(
                    uint64_t(numel), uint64_t(elementSize(dtype)), &expected) &&
                    nbytes == expected,
                "Corrupt archive: a ", toTypeName(dtype), " tensor of ", numel,
                " elements cannot hold ", nbytes, " bytes");
    need(nbytes, "tensor data");
    Tensor t = ember::empty(sizes, TensorOptions(dtype));
    if (nbytes > 0)
      std::memcpy(t.data_ptr(), p_, size_t(nbytes));
    if (dtype == kBool) {
      const auto *b = reinterpret_cast<const uint8_t *>(p_);
      for (uint64_t i = 0; i < nbytes; ++i)
        EMBER_CHECK(b[i] <= 1, "Corrupt archive: bool tensor element ",
                    int(b[i]));
    }
    p_ += nbytes;
    if (device_ && *device_ != t.device())
      t = t.to(*device_);
    return t;
  }
  IValue value() {
    uint8_t tag = pod<uint8_t>();
    switch (tag) {
    case kNoneTag:
      return IValue();
    case kIntTag:
      return IValue(pod<int64_t>());
    case kDoubleTag:
      return IValue(pod<double>());
    case kBoolTag: {
      uint8_t b = pod<uint8_t>();
      EMBER_CHECK(b <= 1, "Corrupt archive: bad bool ", int(b));
      return IValue(bool(b));
    }
    case kStringTag:
      return IValue(string());
    case kIntListTag: {
      std::vector<int64_t> l(size_t(count(8)));
      for (auto &x : l)
        x = pod<int64_t>();
      return IValue(std::move(l));
    }
    case kDoubleListTag: {
      std::vector<double> l(size_t(count(8)));
      for (auto &x : l)
        x = pod<double>();
      return IValue(std::move(l));
    }
    case kTensorListTag: {
      std::vector<Tensor> l(size_t(count(1)));
      for (auto &t : l)
        t = tensor();
      return IValue(std::move(l));
    }
    case kScalarTypeTag:
      return IValue(parse_dtype(string()));
    case kDeviceTag: {
      std::string s = string();
      try {
        return IValue(Device(s));
      } catch (const Error &) {
        throw Error(
            ember::detail::str("Corrupt archive: bad device '", s, "'"));
      }
    }
    default:
      throw Error(
          ember::detail::str("Corrupt archive: unknown value tag ", int(tag)));
    }
  }
  std::shared_ptr<ArchiveNode> archive(int depth) {
    EMBER_CHECK(depth <= kMaxDepth, "Corrupt archive: nesting deeper than ",
                kMaxDepth);
    auto node = std::make_shared<ArchiveNode>();
    // An entry takes at least a key length (8), a kind (1) and one byte.
    uint64_t n = count(10);
    for (uint64_t i = 0; i < n; ++i) {
      std::string key = string();
      EMBER_CHECK(!node->entries.contains(key),
                  "Corrupt archive: duplicate key '", key, "'");
      Entry e;
      uint8_t kind = pod<uint8_t>();
      switch (kind) {
      case Entry::kTensor:
      case Entry::kBuffer:
        e.kind = Entry::Kind(kind);
        e.tensor = tensor();
        break;
      case Entry::kArchive:
        e.kind = Entry::kArchive;
        e.archive = archive(depth + 1);
        break;
      case Entry::kValue:
        e.kind = Entry::kValue;
        e.value = value();
        break;
      default:
        throw Error(ember::detail::str("Corrupt archive: unknown entry kind ",
                                       int(kind), " for key '", key, "'"));
      }
      node->entries.insert(std::move(key), std::move(e));
    }
    return node;
  }
  bool at_end() const { return p_ == end_; }

private:
  void need(uint64_t n, const char *what) {
    EMBER_CHECK(n <= uint64_t(end_ - p_),
                "Corrupt or truncated archive: expected ", n,
                " more bytes for ", what, " but only ", end_ - p_, " remain");
  }
  const char *p_;
  const char *end_;
  std::optional<Device> device_;
};

std::shared_ptr<const ArchiveNode> decode(const char *data, size_t size,
                                          std::optional<Device> device) {
  EMBER_CHECK(size >= kHeaderSize, "Truncated archive: ", size,
              " bytes is shorter than the ", kHeaderSize,
              "-byte header (is this an ember archive?)");
  EMBER_CHECK(std::memcmp(data, kMagic, sizeof(kMagic)) == 0,
              "Not an ember archive (bad magic number); ember::load reads "
              "files written by ember::save, not PyTorch's torch.save");
  Reader header(data + sizeof(kMagic), kHeaderSize - sizeof(kMagic),
                std::nullopt);
  uint32_t version = header.pod<uint32_t>();
  EMBER_CHECK(version == kVersion, "Unsupported ember archive version ",
              version, " (this build reads version ", kVersion, ")");
  (void)header.pod<uint32_t>();
  uint64_t payload_size = header.pod<uint64_t>();
  uint64_t sum = header.pod<uint64_t>();
  EMBER_CHECK(payload_size == size - kHeaderSize,
              "Truncated or corrupt archive: the header announces ",
              payload_size, " bytes of data but ", size - kHeaderSize,
              " follow it");
  const char *payload = data + kHeaderSize;
  EMBER_CHECK(checksum(payload, size_t(payload_size)) == sum,
              "Corrupt archive: checksum mismatch");
  Reader r(payload, size_t(payload_size), device);
  auto root = r.archive(0);
  EMBER_CHECK(r.at_end(), "Corrupt archive: trailing bytes after the data");
  return root;
}

} // namespace

// --- OutputArchive
// -------------------------------------------------------------

OutputArchive::OutputArchive() : root_(std::make_shared<ArchiveNode>()) {}

void OutputArchive::write(const std::string &key, const Tensor &tensor,
                          bool is_buffer) {
  Entry e;
  e.kind = is_buffer ? Entry::kBuffer : Entry::kTensor;
  e.tensor = tensor;
  root_->entries.insert(key, std::move(e));
}

void OutputArchive::write(const std::string &key,
                          const OutputArchive &nested_archive) {
  EMBER_CHECK(nested_archive.root_ != root_,
              "Cannot write an archive into itself (key '", key, "')");
  Entry e;
  e.kind = Entry::kArchive;
  e.archive = nested_archive.root_;
  root_->entries.insert(key, std::move(e));
}

void OutputArchive::write(const std::string &key, const IValue &value) {
  EMBER_CHECK_TYPE(!value.isGenerator(),
                   "Cannot write a Generator to an archive (key '", key, "')");
  Entry e;
  e.kind = Entry::kValue;
  e.value = value;
  root_->entries.insert(key, std::move(e));
}

void OutputArchive::save_to(const std::string &filename) const {
  std::ofstream file(filename, std::ios::binary | std::ios::trunc);
  EMBER_CHECK(file.good(), "Cannot open '", filename, "' for writing");
  save_to(file);
  file.close();
  EMBER_CHECK(!file.fail(), "Error while writing '", filename, "'");
}

void OutputArchive::save_to(std::ostream &stream) const {
  std::string bytes = encode(*root_);
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  EMBER_CHECK(stream.good(), "Error while writing an archive to a stream");
}

void OutputArchive::save_to(
    const std::function<size_t(const void *, size_t)> &func) const {
  std::string bytes = encode(*root_);
  size_t written = func(bytes.data(), bytes.size());
  EMBER_CHECK(written == bytes.size(), "The writer function consumed ", written,
              " of ", bytes.size(), " bytes");
}

std::vector<std::string> OutputArchive::keys() const {
  return root_->entries.keys();
}

// --- InputArchive
// --------------------------------------------------------------

InputArchive::InputArchive() : root_(std::make_shared<ArchiveNode>()) {}

bool InputArchive::try_read(const std::string &key, Tensor &tensor,
                            bool is_buffer) {
  const Entry *e = root_->entries.find(key);
  if (e == nullptr)
    return false;
  const std::string name = hierarchy_prefix_ + key;
  EMBER_CHECK(e->kind == Entry::kTensor || e->kind == Entry::kBuffer, "'", name,
              "' in the archive is not a tensor but a ",
              e->kind == Entry::kArchive ? "nested archive" : "value");
  EMBER_CHECK((e->kind == Entry::kBuffer) == is_buffer,
              "Expected deserialized tensor for key '", name, "' to be a ",
              is_buffer ? "buffer" : "parameter", ", but it was saved as a ",
              is_buffer ? "parameter" : "buffer");
  const Tensor &loaded = e->tensor;
  if (!tensor.defined() || !loaded.defined()) {
    EMBER_CHECK(!tensor.defined(),
                "The archive holds an undefined tensor for '", name,
                "', which cannot be loaded into a defined tensor");
    tensor = loaded.defined() ? loaded.clone() : Tensor();
    return true;
  }
  EMBER_CHECK(tensor.sizes() == loaded.sizes(), "Size mismatch when loading '",
              name, "': the archive holds a tensor of shape ", loaded.sizes(),
              " but the destination tensor has shape ", tensor.sizes());
  NoGradGuard no_grad;
  tensor.copy_(loaded);
  return true;
}

void InputArchive::read(const std::string &key, Tensor &tensor,
                        bool is_buffer) {
  EMBER_CHECK(try_read(key, tensor, is_buffer), "No such serialized ",
              is_buffer ? "buffer" : "tensor", " '", hierarchy_prefix_, key,
              "' in the archive");
}

bool InputArchive::try_read(const std::string &key, InputArchive &archive) {
  const Entry *e = root_->entries.find(key);
  if (e == nullptr)
    return false;
  EMBER_CHECK(e->kind == Entry::kArchive, "'", hierarchy_prefix_, key,
              "' in the archive is not a nested archive but a ",
              e->kind == Entry::kValue ? "value" : "tensor");
  archive.root_ = e->archive;
  archive.hierarchy_prefix_ = hierarchy_prefix_ + key + ".";
  return true;
}

void InputArchive::read(const std::string &key, InputArchive &archive) {
  EMBER_CHECK(try_read(key, archive), "No such serialized submodule '",
              hierarchy_prefix_, key, "' in the archive");
}

bool InputArchive::try_read(const std::string &key, IValue &value) {
  const Entry *e = root_->entries.find(key);
  if (e == nullptr)
    return false;
  EMBER_CHECK(e->kind == Entry::kValue, "'", hierarchy_prefix_, key,
              "' in the archive is not a value but a ",
              e->kind == Entry::kArchive ? "nested archive" : "tensor");
  value = e->value;
  return true;
}

void InputArchive::read(const std::string &key, IValue &value) {
  EMBER_CHECK(try_read(key, value), "No such serialized value '",
              hierarchy_prefix_, key, "' in the archive");
}

void InputArchive::load_from(const std::string &filename,
                             std::optional<Device> device) {
  std::error_code ec;
  EMBER_CHECK(!std::filesystem::is_directory(filename, ec), "Cannot load '",
              filename,
              "': it is a directory; pass the path of a file written by "
              "ember::save");
  std::ifstream file(filename, std::ios::binary);
  EMBER_CHECK(file.good(), "Cannot open '", filename, "' for reading");
  try {
    load_from(file, device);
  } catch (const Error &e) {
    throw Error(
        ember::detail::str("while loading '", filename, "': ", e.what()));
  }
  EMBER_CHECK(file.peek() == std::char_traits<char>::eof(), "Corrupt archive '",
              filename, "': trailing bytes after the data");
}

void InputArchive::load_from(std::istream &stream,
                             std::optional<Device> device) {
  // Reads exactly one archive (header, then the payload size it announces),
  // so archives can follow each other in a stream. The payload is read in
  // bounded chunks: a corrupt size fails as truncation, not as a huge
  // allocation.
  std::string bytes(kHeaderSize, '\0');
  stream.read(bytes.data(), std::streamsize(kHeaderSize));
  EMBER_CHECK(!stream.bad(), "Error while reading an archive from a stream");
  bytes.resize(size_t(stream.gcount()));
  if (bytes.size() == kHeaderSize &&
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0) {
    uint64_t payload_size;
    std::memcpy(&payload_size, bytes.data() + 16, sizeof(payload_size));
    constexpr uint64_t kChunk = uint64_t(1) << 20;
    uint64_t remaining = payload_size;
    while (remaining > 0 && stream.good()) {
      size_t n = size_t(std::min(remaining, kChunk));
      size_t old = bytes.size();
      bytes.resize(old + n);
      stream.read(bytes.data() + old, std::streamsize(n));
      EMBER_CHECK(!stream.bad(),
                  "Error while reading an archive from a stream");
      bytes.resize(old + size_t(stream.gcount()));
      remaining -= uint64_t(stream.gcount());
    }
  }
  load_from(bytes.data(), bytes.size(), device);
}

void InputArchive::load_from(const char *data, size_t size,
                             std::optional<Device> device) {
  root_ = decode(data, size, device);
  hierarchy_prefix_.clear();
}

std::vector<std::string> InputArchive::keys() const {
  return root_->entries.keys();
}

bool InputArchive::contains(const std::string &key) const {
  return root_->entries.contains(key);
}

// --- operators
// -----------------------------------------------------------------

OutputArchive &operator<<(OutputArchive &archive, const Tensor &tensor) {
  archive.write("0", tensor);
  return archive;
}

InputArchive &operator>>(InputArchive &archive, Tensor &tensor) {
  Tensor loaded;
  archive.read("0", loaded);
  if (tensor.defined() && loaded.defined())
    tensor.unsafeGetTensorImpl()->set_data_from(*loaded.unsafeGetTensorImpl());
  else
    tensor = loaded;
  return archive;
}

} // namespace ember::serialize
