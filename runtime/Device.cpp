#include "runtime/Device.h"

namespace ember {

Device::Device(const std::string &s) {
  auto colon = s.find(':');
  std::string name = s.substr(0, colon);
  if (name == "cpu")
    type_ = kCPU;
  else if (name == "cuda")
    type_ = kCUDA;
  else
    throw Error("Expected one of cpu, cuda device type at start of device "
                "string: " +
                s);
  index_ = -1;
  if (colon != std::string::npos) {
    std::string idx = s.substr(colon + 1);
    EMBER_CHECK(!idx.empty() &&
                    idx.find_first_not_of("0123456789") == std::string::npos &&
                    idx.size() < 3,
                "Invalid device string: '", s, "'");
    *this = Device(type_, std::stoi(idx));
  }
}

std::string Device::str() const {
  std::string s = toString(type_);
  if (index_ >= 0) { // (not `":" + to_string`: GCC 12 -Wrestrict, bug 105329)
    s += ':';
    s += std::to_string(index_);
  }
  return s;
}

} // namespace ember
