#include "runtime/DiskCache.h"

#include "runtime/Env.h"
#include "runtime/Logging.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace ember::disk_cache {

namespace {
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t key_size;
  uint64_t payload_size;
  uint64_t checksum;
};
constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'E', 'R'};
constexpr uint32_t kVersion = 1;
constexpr const char *kSuffix = ".ekernel";
} // namespace

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

uint64_t fnv1a(const char *data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

std::optional<std::string> dir() {
  std::string d;
  bool asked = false;
  if (auto e = env::get("EMBER_CACHE_DIR")) {
    if (e->empty())
      return std::nullopt; // switched off on purpose
    d = *e;
    asked = true;
  } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    d = std::string(x) + "/ember";
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    d = std::string(h) + "/.cache/ember";
  } else {
    return std::nullopt;
  }
  std::error_code ec;
  std::filesystem::create_directories(d, ec);
  if (!ec && !std::filesystem::is_directory(d, ec))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) {
    // Not usable: no disk cache, compile as usual. A folder the user named
    // says so once; the default folder (under $HOME) stays quiet.
    if (asked)
      logging::warn_once("EMBER_CACHE_DIR",
                         "EMBER_CACHE_DIR=" + d + " is not usable (" +
                             ec.message() +
                             "); the kernel disk cache is off, kernels are "
                             "compiled in every process. Set it to a "
                             "writable folder, or to \"\" to switch the "
                             "cache off without this warning");
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> load(const std::string &name, const std::string &key,
                                std::string *why) {
  std::optional<std::string> d = dir();
  if (!d) {
    *why = "the disk cache is off";
    return std::nullopt;
  }
  std::string path = *d + "/" + name + kSuffix;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *why = "not in the disk cache";
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  Header h;
  if (bytes.size() < sizeof h) {
    *why = "disk cache entry " + path + " is truncated";
    return std::nullopt;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 ||
      h.version != kVersion) {
    *why = "disk cache entry " + path + " has another format";
    return std::nullopt;
  }
  if (sizeof h + uint64_t(h.key_size) + h.payload_size != bytes.size()) {
    *why = "disk cache entry " + path + " is truncated";
    return std::nullopt;
  }
  if (h.key_size != key.size() || bytes.compare(sizeof h, h.key_size, key)) {
    *why = "disk cache entry " + path +
           " is stale (another kernel, target, compiler or ember)";
    return std::nullopt;
  }
  const char *payload = bytes.data() + sizeof h + h.key_size;
  if (fnv1a(payload, h.payload_size) != h.checksum) {
    *why = "disk cache entry " + path + " is corrupt (checksum mismatch)";
    return std::nullopt;
  }
  return std::string(payload, h.payload_size);
}

void store(const std::string &name, const std::string &key, const char *data,
           size_t size) {
  std::optional<std::string> d = dir();
  if (!d)
    return;
  Header h;
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.key_size = uint32_t(key.size());
  h.payload_size = size;
  h.checksum = fnv1a(data, size);
  std::string path = *d + "/" + name + kSuffix;
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(&h), sizeof h);
    f.write(key.data(), std::streamsize(key.size()));
    f.write(data, std::streamsize(size));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec); // a failed write: no cache entry
  if (ec)
    std::filesystem::remove(tmp, ec);
}

} // namespace ember::disk_cache
