#pragma once
/// Saving and loading tensors, modules and optimizer state (libtorch's
/// torch/serialize.h and torch/serialize/archive.h).
///
///   ember::save(model, "model.bin");   // a ModuleHolder or shared_ptr
///   ember::load(model, "model.bin");   // values copied into its tensors
///   ember::save(std::vector<ember::Tensor>{a, b}, "tensors.bin");
///
/// An archive is an ordered tree of keys. What a key can hold, and the calls
/// that write and read it:
///
///   tensor          write(key, tensor, is_buffer = false)
///                   read(key, tensor&, is_buffer = false) / try_read
///   nested archive  write(key, const OutputArchive &)
///                   read(key, InputArchive &) / try_read
///   value           write(key, const IValue &)     (one overload for all)
///                   read(key, IValue &) / try_read
///
/// A value is an IValue holding None, an int64, a double, a bool, a
/// std::string, a std::vector<int64_t>, a std::vector<double>, a
/// std::vector<Tensor>, a ScalarType or a Device, so that
/// `archive.write("step", int64_t(3))`, `archive.write("lr", 0.1)` and
/// `archive.write("name", std::string("adam"))` all work (libtorch's
/// write(key, IValue)); a Generator cannot be stored.
///
/// Reading a tensor into a defined tensor copies the values in place (under
/// NoGradGuard) after checking that the shapes match; into an undefined one,
/// it assigns the loaded tensor. A missing key, a tensor/buffer or kind
/// mismatch, a shape mismatch, and a truncated or corrupt file raise
/// ember::Error.

#include "eager/IValue.h"
#include "eager/Tensor.h"
#include "eager/nn/Module.h"

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ember {
namespace serialize {

// Note [Archive file format]
// ember's own compact binary format; it is NOT compatible with PyTorch's
// pickle/zip files (torch.save) or TorchScript archives. All integers are
// little-endian.
//
//   header (32 bytes):
//     magic        8 bytes  "EMBERARC"
//     version      u32      1
//     reserved     u32      0
//     payload_size u64      bytes that follow the header
//     checksum     u64      ember's 64-bit checksum of the payload
//   payload: an archive
//     archive  = u64 count, count entries (in write order)
//     entry    = string key, u8 kind, body
//       kind 1 tensor, 2 buffer: tensor record; 3 archive: archive;
//       kind 4 value: value record
//     tensor   = u8 defined; if defined: string dtype ("Float", ...), u64
//                ndim, ndim i64 sizes, u64 nbytes, nbytes raw row-major bytes
//     value    = u8 tag, then: 0 none; 1 i64; 2 f64; 3 u8 bool; 4 string;
//                5 u64 n + n i64; 6 u64 n + n f64; 7 u64 n + n tensors;
//                8 string dtype; 9 string device ("cuda:0")
//     string   = u64 length, bytes
//
// Loading reads one archive (from a stream: the header, then exactly the
// payload size it announces, so archives may follow each other; from a file:
// the whole file), checks the magic, the version, that the payload is
// complete and its checksum, then parses with
// bounds checks on every read (counts, sizes, dtype names, bool bytes,
// nesting depth), so truncated or corrupt input raises ember::Error instead
// of reading out of bounds. Tensors are saved from the CPU (CUDA tensors are
// copied) and loaded onto the CPU, or onto the device given to load_from.

namespace detail {
struct ArchiveNode;
}

/// A tree of named tensors, values and nested archives being written
/// (torch::serialize::OutputArchive).
class OutputArchive {
public:
  OutputArchive();

  /// Writes a tensor (a parameter, or a buffer when is_buffer). The tensor
  /// is captured by reference: its values at save_to() time are written.
  void write(const std::string &key, const Tensor &tensor,
             bool is_buffer = false);
  /// Writes a nested archive (a submodule's state).
  void write(const std::string &key, const OutputArchive &nested_archive);
  /// Writes a value (int64, double, bool, string, lists, dtype, device).
  void write(const std::string &key, const IValue &value);
  /// archive("key", value) is write("key", value).
  template <class... Ts> void operator()(Ts &&...ts) {
    write(std::forward<Ts>(ts)...);
  }

  /// Serializes the archive to a file, a stream or a writer function that
  /// returns how many bytes it consumed.
  void save_to(const std::string &filename) const;
  void save_to(std::ostream &stream) const;
  void save_to(const std::function<size_t(const void *, size_t)> &func) const;

  /// The keys written so far, in order.
  std::vector<std::string> keys() const;

private:
  friend class InputArchive;
  std::shared_ptr<detail::ArchiveNode> root_;
};

/// A loaded archive (torch::serialize::InputArchive).
class InputArchive {
public:
  InputArchive();

  /// Reads tensor `key` into `tensor`: in place (same shape required) when
  /// it is defined, by assignment otherwise. is_buffer must match how it
  /// was written. read raises when the key is missing; try_read returns
  /// false.
  void read(const std::string &key, Tensor &tensor, bool is_buffer = false);
  bool try_read(const std::string &key, Tensor &tensor, bool is_buffer = false);
  /// Reads the nested archive `key`.
  void read(const std::string &key, InputArchive &archive);
  bool try_read(const std::string &key, InputArchive &archive);
  /// Reads the value `key`.
  void read(const std::string &key, IValue &value);
  bool try_read(const std::string &key, IValue &value);
  /// archive("key", out) is read("key", out).
  template <class... Ts> void operator()(Ts &&...ts) {
    read(std::forward<Ts>(ts)...);
  }

  /// Loads an archive written by OutputArchive::save_to; tensors are placed
  /// on `device` (default: the CPU).
  void load_from(const std::string &filename,
                 std::optional<Device> device = std::nullopt);
  void load_from(std::istream &stream,
                 std::optional<Device> device = std::nullopt);
  void load_from(const char *data, size_t size,
                 std::optional<Device> device = std::nullopt);

  /// The keys of this archive, in write order.
  std::vector<std::string> keys() const;
  bool contains(const std::string &key) const;

private:
  std::shared_ptr<const detail::ArchiveNode> root_;
  /// "fc1." for the archive of submodule fc1: prefixes keys in messages.
  std::string hierarchy_prefix_;
};

/// `archive << tensor` writes it under "0"; `archive >> tensor` reads it
/// back (replacing the data of a defined tensor, keeping its identity, as
/// libtorch's set_).
OutputArchive &operator<<(OutputArchive &archive, const Tensor &tensor);
InputArchive &operator>>(InputArchive &archive, Tensor &tensor);

/// Modules write their parameters, buffers and submodules (Module::save).
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
OutputArchive &operator<<(OutputArchive &archive,
                          const std::shared_ptr<M> &module) {
  EMBER_CHECK(module != nullptr, "Cannot save an empty module");
  module->save(archive);
  return archive;
}
template <class M>
OutputArchive &operator<<(OutputArchive &archive,
                          const nn::ModuleHolder<M> &module) {
  return archive << module.ptr();
}
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
InputArchive &operator>>(InputArchive &archive,
                         const std::shared_ptr<M> &module) {
  EMBER_CHECK(module != nullptr,
              "Cannot load into an empty module; construct it first");
  module->load(archive);
  return archive;
}
template <class M>
InputArchive &operator>>(InputArchive &archive, nn::ModuleHolder<M> &module) {
  return archive >> module.ptr();
}

} // namespace serialize

/// Saves `value` (a Tensor, a module holder or shared_ptr, or anything with
/// an `OutputArchive << value` operator) to a file name, a std::ostream or a
/// writer function (torch::save).
template <class Value, class... SaveToArgs>
void save(const Value &value, SaveToArgs &&...args) {
  serialize::OutputArchive archive;
  archive << value;
  archive.save_to(std::forward<SaveToArgs>(args)...);
}

/// Saves a list of tensors under the keys "0", "1", ...
template <class... SaveToArgs>
void save(const std::vector<Tensor> &tensors, SaveToArgs &&...args) {
  serialize::OutputArchive archive;
  for (size_t i = 0; i < tensors.size(); ++i)
    archive.write(std::to_string(i), tensors[i]);
  archive.save_to(std::forward<SaveToArgs>(args)...);
}

/// Loads into `value` what save() wrote (torch::load): module values are
/// copied into the module's existing tensors.
template <class Value, class... LoadFromArgs>
void load(Value &value, LoadFromArgs &&...args) {
  serialize::InputArchive archive;
  archive.load_from(std::forward<LoadFromArgs>(args)...);
  archive >> value;
}

/// Loads a list of tensors saved by save(std::vector<Tensor>), replacing the
/// contents of `tensors`.
template <class... LoadFromArgs>
void load(std::vector<Tensor> &tensors, LoadFromArgs &&...args) {
  serialize::InputArchive archive;
  archive.load_from(std::forward<LoadFromArgs>(args)...);
  tensors.clear();
  for (size_t i = 0;; ++i) {
    Tensor t;
    if (!archive.try_read(std::to_string(i), t))
      break;
    tensors.push_back(std::move(t));
  }
}

} // namespace ember
