#pragma once
/// The on-disk kernel cache shared by the code generators (CPU objects) and
/// the CUDA kernels (cubins).
///
/// Note [Disk kernel cache]
/// One file an entry, <dir>/<name><suffix>: a header, the full cache key
/// (what the kernel computes and for which target, compiler and ember),
/// then the payload. A load checks the magic, the format version, the sizes
/// against the file's, the key (a different target or compiler makes the
/// entry stale) and a checksum of the payload (a corrupt entry); any failure
/// is a miss, and the caller rebuilds and stores the entry again (written to
/// a temporary name, then renamed: readers never see half a file).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ember::disk_cache {

/// The cache folder (EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else
/// ~/.cache/ember), created if needed; nullopt when the cache is off or the
/// folder is not usable (a folder the user named says so once).
std::optional<std::string> dir();

/// The payload of entry `name` if present, whole and made for `key`; else
/// nullopt with the reason in *why.
std::optional<std::string> load(const std::string &name, const std::string &key,
                                std::string *why);
/// Writes entry `name` atomically; a failed write leaves no entry.
void store(const std::string &name, const std::string &key, const char *data,
           size_t size);

/// 64-bit FNV-1a of a byte string (checksums and cache names).
uint64_t fnv1a(const char *data, size_t n);
inline uint64_t fnv1a(const std::string &s) {
  return fnv1a(s.data(), s.size());
}
/// A hash as 16 hex digits: how cache entries and kernels are named.
std::string hex(uint64_t h);

} // namespace ember::disk_cache
