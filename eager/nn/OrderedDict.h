#pragma once
/// ember::OrderedDict: an insertion-ordered dictionary with libtorch's
/// torch::OrderedDict interface (items with key() and value(), keys(),
/// values(), operator[], find, contains). Modules keep their parameters,
/// buffers and children in one.

#include "runtime/Error.h"

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember {

/// Insertion-ordered map from Key to Value. Lookups by key are O(1); iteration
/// visits items in insertion order.
template <class Key, class Value> class OrderedDict {
public:
  /// One key-value pair (torch::OrderedDict::Item).
  class Item {
  public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key &key() const noexcept { return pair_.first; }
    Value &value() noexcept { return pair_.second; }
    const Value &value() const noexcept { return pair_.second; }
    Value &operator*() noexcept { return value(); }
    const Value &operator*() const noexcept { return value(); }
    Value *operator->() noexcept { return &value(); }
    const Value *operator->() const noexcept { return &value(); }
    const std::pair<Key, Value> &pair() const noexcept { return pair_; }

  private:
    std::pair<Key, Value> pair_;
  };

  using Iterator = typename std::vector<Item>::iterator;
  using ConstIterator = typename std::vector<Item>::const_iterator;
  using iterator = Iterator;
  using const_iterator = ConstIterator;

  /// `key_description` names the keys in error messages ("Parameter",
  /// "Buffer", "Submodule").
  explicit OrderedDict(std::string key_description = "Key")
      : key_description_(std::move(key_description)) {}
  OrderedDict(std::initializer_list<Item> items) : OrderedDict() {
    for (const Item &item : items)
      insert(item.key(), item.value());
  }

  const std::string &key_description() const noexcept {
    return key_description_;
  }

  // --- element access ------------------------------------------------------
  Item &front() {
    check_nonempty("front");
    return items_.front();
  }
  const Item &front() const {
    check_nonempty("front");
    return items_.front();
  }
  Item &back() {
    check_nonempty("back");
    return items_.back();
  }
  const Item &back() const {
    check_nonempty("back");
    return items_.back();
  }
  /// The item at position `index` in insertion order.
  Item &operator[](size_t index) {
    check_index(index);
    return items_[index];
  }
  const Item &operator[](size_t index) const {
    check_index(index);
    return items_[index];
  }
  /// The value under `key`; throws when absent.
  Value &operator[](const Key &key) {
    if (Value *v = find(key))
      return *v;
    throw IndexError(
        detail::str(key_description_, " '", key, "' is not defined"));
  }
  const Value &operator[](const Key &key) const {
    if (const Value *v = find(key))
      return *v;
    throw IndexError(
        detail::str(key_description_, " '", key, "' is not defined"));
  }
  /// A pointer to the value under `key`, or null.
  Value *find(const Key &key) noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value *find(const Key &key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key &key) const noexcept { return index_.count(key); }

  // --- iteration -------------------------------------------------------------
  Iterator begin() { return items_.begin(); }
  ConstIterator begin() const { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator end() const { return items_.end(); }

  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  bool empty() const noexcept { return items_.empty(); }

  // --- modifiers -------------------------------------------------------------
  /// Inserts a new item; throws when `key` is already present.
  template <class K, class V> Value &insert(K &&key, V &&value) {
    EMBER_CHECK(!index_.count(key), key_description_, " '", key,
                "' already defined");
    Key k(std::forward<K>(key));
    index_.emplace(k, items_.size());
    items_.emplace_back(std::move(k), Value(std::forward<V>(value)));
    return items_.back().value();
  }
  /// Inserts or overwrites every item of `other`, keeping this order for
  /// keys already present.
  void update(const OrderedDict &other) {
    for (const Item &item : other) {
      if (Value *v = find(item.key()))
        *v = item.value();
      else
        insert(item.key(), item.value());
    }
  }
  /// Removes the item under `key` and returns its value; throws when absent.
  Value pop(const Key &key) {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), key_description_, " '", key,
                "' is not defined");
    size_t pos = it->second;
    Value v = std::move(items_[pos].value());
    erase(key);
    return v;
  }
  /// Removes the item under `key` (no-op when absent).
  void erase(const Key &key) {
    auto it = index_.find(key);
    if (it == index_.end())
      return;
    size_t pos = it->second;
    index_.erase(it);
    items_.erase(items_.begin() + std::ptrdiff_t(pos));
    for (auto &entry : index_)
      if (entry.second > pos)
        --entry.second;
  }
  void clear() {
    index_.clear();
    items_.clear();
  }
  void reserve(size_t n) {
    index_.reserve(n);
    items_.reserve(n);
  }

  // --- views -----------------------------------------------------------------
  const std::vector<Item> &items() const noexcept { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const Item &item : items_)
      out.push_back(item.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const Item &item : items_)
      out.push_back(item.value());
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> out;
    out.reserve(items_.size());
    for (const Item &item : items_)
      out.push_back(item.pair());
    return out;
  }

private:
  void check_nonempty(const char *what) const {
    EMBER_CHECK(!items_.empty(), "Called ", what, "() on an empty OrderedDict");
  }
  void check_index(size_t index) const {
    EMBER_CHECK_INDEX(index < items_.size(), "Index ", index,
                      " is out of bounds for an OrderedDict of size ",
                      items_.size());
  }

  std::unordered_map<Key, size_t> index_;
  std::vector<Item> items_;
  std::string key_description_;
};

} // namespace ember
