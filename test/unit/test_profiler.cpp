// The profiler (eager/profiler/Profiler.h, runtime/Profiler.h): ops recorded
// through the dispatcher with exact call counts, record_function scopes and
// their nesting (self vs total time), input shapes and grouping by shape,
// PyTorch's table layout (checked against strings made by torch's own
// _build_table algorithm), sort keys and row limits, Chrome trace JSON
// (parsed here), profile_memory, threads, and misuse.
#include "TestUtil.h"

#include "eager/Memory.h"
#include "eager/profiler/Profiler.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace ember;
using namespace ember::test;
using namespace ember::profiler;

namespace {

// --- a strict JSON parser: validates the grammar and collects the decoded
// strings, so the test checks both that the trace parses and that escaped
// names come back as they were
// -------------------------------------------------

class JsonChecker {
public:
  explicit JsonChecker(const std::string &s) : s_(s) {}
  /// True when the whole text is one valid JSON value.
  bool parse() {
    ws();
    if (!value())
      return false;
    ws();
    return i_ == s_.size();
  }
  std::vector<std::string> strings; // every decoded string, keys included
  std::string error() const { return "at offset " + std::to_string(i_); }

private:
  bool value() {
    if (i_ >= s_.size())
      return false;
    char c = s_[i_];
    if (c == '{')
      return object();
    if (c == '[')
      return array();
    if (c == '"')
      return string();
    if (c == '-' || (c >= '0' && c <= '9'))
      return number();
    for (const char *lit : {"true", "false", "null"})
      if (s_.compare(i_, std::strlen(lit), lit) == 0) {
        i_ += std::strlen(lit);
        return true;
      }
    return false;
  }
  bool object() {
    ++i_;
    ws();
    if (peek() == '}')
      return ++i_, true;
    for (;;) {
      ws();
      if (peek() != '"' || !string())
        return false;
      ws();
      if (peek() != ':')
        return false;
      ++i_;
      ws();
      if (!value())
        return false;
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == '}')
        return ++i_, true;
      return false;
    }
  }
  bool array() {
    ++i_;
    ws();
    if (peek() == ']')
      return ++i_, true;
    for (;;) {
      ws();
      if (!value())
        return false;
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == ']')
        return ++i_, true;
      return false;
    }
  }
  bool string() {
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20)
        return false; // raw control characters are not allowed
      if (c != '\\') {
        out += char(c);
        ++i_;
        continue;
      }
      if (++i_ >= s_.size())
        return false;
      char e = s_[i_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (i_ + 4 > s_.size())
          return false;
        unsigned cp = 0;
        for (int k = 0; k < 4; ++k) {
          char h = s_[i_++];
          cp <<= 4;
          if (h >= '0' && h <= '9')
            cp |= unsigned(h - '0');
          else if (h >= 'a' && h <= 'f')
            cp |= unsigned(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F')
            cp |= unsigned(h - 'A' + 10);
          else
            return false;
        }
        if (cp < 0x80) {
          out += char(cp);
        } else if (cp < 0x800) {
          out += char(0xC0 | (cp >> 6));
          out += char(0x80 | (cp & 0x3F));
        } else {
          out += char(0xE0 | (cp >> 12));
          out += char(0x80 | ((cp >> 6) & 0x3F));
          out += char(0x80 | (cp & 0x3F));
        }
        break;
      }
      default:
        return false;
      }
    }
    if (i_ >= s_.size())
      return false;
    ++i_;
    strings.push_back(out);
    return true;
  }
  bool number() {
    size_t start = i_;
    if (peek() == '-')
      ++i_;
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      return false;
    if (peek() == '0')
      ++i_;
    else
      while (std::isdigit(static_cast<unsigned char>(peek())))
        ++i_;
    if (peek() == '.') {
      ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        return false;
      while (std::isdigit(static_cast<unsigned char>(peek())))
        ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-')
        ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        return false;
      while (std::isdigit(static_cast<unsigned char>(peek())))
        ++i_;
    }
    return i_ > start;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' ||
                              s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  const std::string &s_;
  size_t i_ = 0;
};

const FunctionEvent *findEvent(const std::vector<FunctionEvent> &evs,
                               const std::string &name) {
  for (const FunctionEvent &e : evs)
    if (e.name == name)
      return &e;
  return nullptr;
}

const FunctionEvent &byId(const std::vector<FunctionEvent> &evs, int64_t id) {
  for (const FunctionEvent &e : evs)
    if (e.id == id)
      return e;
  throw Error("no event with id " + std::to_string(id));
}

/// The data rows of a table: the lines between the second and the third
/// dashed separator.
std::vector<std::string> dataRows(const std::string &table) {
  std::istringstream in(table);
  std::string line;
  std::vector<std::string> rows;
  int seps = 0;
  while (std::getline(in, line)) {
    if (line.rfind("---", 0) == 0) {
      ++seps;
      continue;
    }
    if (seps == 2)
      rows.push_back(line);
  }
  return rows;
}

std::string firstWord(const std::string &row) {
  std::istringstream in(row);
  std::string w;
  in >> w;
  return w;
}

/// A custom op whose kernel calls two ops through the dispatcher: its event
/// must hold theirs.
Tensor twice_then_square(const Tensor &x) {
  Tensor y = ember::add(x, x);
  return ember::mul(y, y);
}
const bool kTwiceRegistered = [] {
  static Library lib("proftest");
  lib.def("twice_then_square(Tensor x) -> Tensor", &twice_then_square);
  return true;
}();

} // namespace

TEST(Profiler, NothingIsRecordedWhileOff) {
  EXPECT_FALSE(active());
  Tensor a = randn({4, 4});
  Tensor b = add(a, a); // before any profiler: not recorded
  profile prof;
  EXPECT_FALSE(prof.is_running());
  // Never started: no results to read (torch.profiler asserts too).
  EXPECT_EMBER_ERROR(prof.events(), "has not run");
  EXPECT_EMBER_ERROR(prof.key_averages(), "has not run");
  prof.start();
  EXPECT_TRUE(active());
  prof.stop();
  EXPECT_FALSE(active());
  Tensor c = mul(a, b); // after stop: not recorded
  { record_function scope("after"); }
  EXPECT_TRUE(prof.events().empty());
  EXPECT_TRUE(prof.key_averages().empty());
}

TEST(Profiler, ExactCallCountsForAKnownProgram) {
  Tensor x = randn({8, 16}), w1 = randn({16, 32}), w2 = randn({32, 32}),
         w3 = randn({32, 4});
  profile prof({ProfilerActivity::CPU});
  {
    auto g = prof.guard();
    EXPECT_TRUE(prof.is_running());
    Tensor h = relu(matmul(x, w1));
    h = relu(matmul(h, w2));
    Tensor y = matmul(h, w3);
  }
  EXPECT_FALSE(prof.is_running());
  EventList avg = prof.key_averages();
  EXPECT_EQ(avg.find("ember::mm").count, 3);
  EXPECT_EQ(avg.find("ember::relu").count, 2);
  // Every row's count is its number of events.
  int64_t total = 0;
  for (const FunctionEventAvg &r : avg)
    total += r.count;
  EXPECT_EQ(total, int64_t(prof.events().size()));
  std::string t = avg.table("self_cpu_time_total", 10);
  EXPECT_NE(t.find("ember::mm"), std::string::npos) << t;
  EXPECT_NE(t.find("ember::relu"), std::string::npos) << t;
  EXPECT_NE(t.find("Self CPU time total: "), std::string::npos) << t;
  // The footer is the sum of the rows' self times.
  double sum = 0;
  for (const FunctionEventAvg &r : avg)
    sum += r.self_cpu_time_total;
  EXPECT_DOUBLE_EQ(avg.self_cpu_time_total(), sum);
}

TEST(Profiler, UserScopesNestAndHoldTheirOps) {
  Tensor a = randn({64, 64});
  profile prof;
  prof.start();
  {
    record_function outer("outer");
    {
      record_function inner(std::string("inner"));
      Tensor s = add(a, a);
    }
    Tensor m = mul(a, a);
  }
  prof.stop();
  const auto &evs = prof.events();
  const FunctionEvent *outer = findEvent(evs, "outer");
  const FunctionEvent *inner = findEvent(evs, "inner");
  const FunctionEvent *addE = findEvent(evs, "ember::add");
  const FunctionEvent *mulE = findEvent(evs, "ember::mul");
  ASSERT_TRUE(outer && inner && addE && mulE);
  EXPECT_TRUE(outer->is_user_annotation());
  EXPECT_FALSE(addE->is_user_annotation());
  EXPECT_EQ(outer->cpu_parent, -1);
  EXPECT_EQ(inner->cpu_parent, outer->id);
  EXPECT_EQ(addE->cpu_parent, inner->id);
  EXPECT_EQ(mulE->cpu_parent, outer->id);
  // Intervals nest, and self time is total minus the children's totals.
  EXPECT_LE(outer->start_us, inner->start_us);
  EXPECT_LE(inner->end_us, outer->end_us);
  EXPECT_LE(inner->start_us, addE->start_us);
  EXPECT_LE(addE->end_us, inner->end_us);
  EXPECT_GE(outer->cpu_time_total,
            inner->cpu_time_total + mulE->cpu_time_total);
  for (const FunctionEvent &e : evs) {
    double children = 0;
    for (int64_t c : e.cpu_children) {
      children += byId(evs, c).cpu_time_total;
      EXPECT_EQ(byId(evs, c).cpu_parent, e.id);
    }
    EXPECT_NEAR(e.self_cpu_time_total, e.cpu_time_total - children, 1e-3)
        << e.name;
    EXPECT_GE(e.self_cpu_time_total, 0) << e.name;
  }
  EventList avg = prof.key_averages();
  EXPECT_GE(avg.find("outer").cpu_time_total, avg.find("inner").cpu_time_total);
  EXPECT_LT(avg.find("outer").self_cpu_time_total,
            avg.find("outer").cpu_time_total);
  // The footer counts every microsecond once: it equals the top-level
  // event's total.
  EXPECT_NEAR(avg.self_cpu_time_total(), outer->cpu_time_total, 1e-3);
}

TEST(Profiler, OpsCalledByAKernelNestInsideTheirCaller) {
  auto op = find_op<Tensor(const Tensor &)>("proftest::twice_then_square");
  Tensor x = randn({16});
  profile prof;
  {
    auto g = prof.guard();
    Tensor y = op.call(x);                                   // typed path
    Stack out = call_op("proftest::twice_then_square", {x}); // boxed path
  }
  const auto &evs = prof.events();
  EventList avg = prof.key_averages();
  EXPECT_EQ(avg.find("proftest::twice_then_square").count, 2);
  EXPECT_EQ(avg.find("ember::add").count, 2);
  EXPECT_EQ(avg.find("ember::mul").count, 2);
  for (const FunctionEvent &e : evs) {
    if (e.name != "proftest::twice_then_square")
      continue;
    ASSERT_EQ(e.cpu_children.size(), 2u);
    EXPECT_EQ(byId(evs, e.cpu_children[0]).name, "ember::add");
    EXPECT_EQ(byId(evs, e.cpu_children[1]).name, "ember::mul");
  }
  const FunctionEventAvg &caller = avg.find("proftest::twice_then_square");
  EXPECT_GE(caller.cpu_time_total, avg.find("ember::add").cpu_time_total +
                                       avg.find("ember::mul").cpu_time_total);
  EXPECT_LT(caller.self_cpu_time_total, caller.cpu_time_total);
}

TEST(Profiler, BackwardScopesAreNamedLikePyTorchs) {
  profile prof;
  prof.start();
  {
    record_function node("MulBackward0", RecordScope::BACKWARD_FUNCTION);
    EXPECT_TRUE(node.is_recording());
  }
  prof.stop();
  ASSERT_EQ(prof.events().size(), 1u);
  EXPECT_EQ(prof.events()[0].name,
            "autograd::engine::evaluate_function: MulBackward0");
  EXPECT_FALSE(prof.events()[0].is_user_annotation());
}

TEST(Profiler, GroupByInputShapeSplitsRowsAndShowsShapes) {
  Tensor a = randn({2, 3}), b = randn({4, 5});
  profile prof({ProfilerActivity::CPU}, /*record_shapes=*/true);
  {
    auto g = prof.guard();
    Tensor x = add(a, a);
    x = add(x, a);
    Tensor y = add(b, b);
    { record_function scope("scope"); }
  }
  EventList byShape = prof.key_averages(/*group_by_input_shape=*/true);
  int64_t rows23 = 0, rows45 = 0;
  for (const FunctionEventAvg &r : byShape) {
    if (r.key != "ember::add")
      continue;
    using Shapes = std::vector<std::vector<int64_t>>;
    if (r.input_shapes == Shapes{{2, 3}, {2, 3}, {}})
      rows23 = r.count;
    else if (r.input_shapes == Shapes{{4, 5}, {4, 5}, {}})
      rows45 = r.count;
    else
      ADD_FAILURE() << "unexpected shapes for ember::add";
  }
  EXPECT_EQ(rows23, 2);
  EXPECT_EQ(rows45, 1);
  std::string t = byShape.table();
  EXPECT_NE(t.find("Input Shapes  \n"), std::string::npos) << t;
  EXPECT_NE(t.find("[[2, 3], [2, 3], []]"), std::string::npos) << t;
  EXPECT_NE(t.find("[[4, 5], [4, 5], []]"), std::string::npos) << t;
  // The types of the arguments are recorded with the shapes.
  const FunctionEvent *e = findEvent(prof.events(), "ember::add");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->input_types,
            (std::vector<std::string>{"float32", "float32", "Scalar"}));

  // Without grouping: one row, no shapes column.
  EventList merged = prof.key_averages();
  EXPECT_EQ(merged.find("ember::add").count, 3);
  EXPECT_TRUE(merged.find("ember::add").input_shapes.empty());
  EXPECT_EQ(merged.table().find("Input Shapes"), std::string::npos);

  // Without record_shapes there is nothing to group by.
  profile plain;
  {
    auto g = plain.guard();
    Tensor x = add(a, a);
    Tensor y = add(b, b);
  }
  EventList p = plain.key_averages(true);
  EXPECT_EQ(p.find("ember::add").count, 2);
  EXPECT_EQ(p.table().find("Input Shapes"), std::string::npos);
}

TEST(Profiler, TableLayoutMatchesPyTorch) {
  // The expected strings come from torch.autograd.profiler_util._build_table
  // run on the same rows.
  auto row = [](std::string key, int64_t count, double self, double total,
                std::vector<std::vector<int64_t>> shapes = {}, int64_t mem = 0,
                int64_t selfMem = 0) {
    FunctionEventAvg r;
    r.key = std::move(key);
    r.count = count;
    r.self_cpu_time_total = self;
    r.cpu_time_total = total;
    r.input_shapes = std::move(shapes);
    r.cpu_memory_usage = mem;
    r.self_cpu_memory_usage = selfMem;
    return r;
  };
  std::vector<FunctionEventAvg> rows = {
      row("model_inference", 1, 500.0, 10000.0),
      row("ember::mm", 3, 6000.0, 6000.0),
      row("ember::relu", 2, 1500.0, 1500.0),
      row("ember::add", 20, 2000.0, 2000.0)};
  EventList list(rows, false);
  EXPECT_EQ(
      list.table("self_cpu_time_total", 3),
      "-------------------  ------------  ------------  ------------  "
      "------------  ------------  ------------  \n"
      "               Name    Self CPU %      Self CPU   CPU total %     CPU "
      "total  CPU time avg    # of Calls  \n"
      "-------------------  ------------  ------------  ------------  "
      "------------  ------------  ------------  \n"
      "          ember::mm        60.00%       6.000ms        60.00%       "
      "6.000ms       2.000ms             3  \n"
      "         ember::add        20.00%       2.000ms        20.00%       "
      "2.000ms     100.000us            20  \n"
      "        ember::relu        15.00%       1.500ms        15.00%       "
      "1.500ms     750.000us             2  \n"
      "-------------------  ------------  ------------  ------------  "
      "------------  ------------  ------------  \n"
      "Self CPU time total: 10.000ms\n");

  EventList withMem(rows, true);
  EXPECT_EQ(withMem.table("count"),
            "-------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ------------  "
            "------------  \n"
            "               Name    Self CPU %      Self CPU   CPU total %     "
            "CPU total  CPU time avg       CPU Mem  Self CPU Mem    # of "
            "Calls  \n"
            "-------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ------------  "
            "------------  \n"
            "         ember::add        20.00%       2.000ms        20.00%     "
            "  2.000ms     100.000us           0 b           0 b            "
            "20  \n"
            "          ember::mm        60.00%       6.000ms        60.00%     "
            "  6.000ms       2.000ms           0 b           0 b             "
            "3  \n"
            "        ember::relu        15.00%       1.500ms        15.00%     "
            "  1.500ms     750.000us           0 b           0 b             "
            "2  \n"
            "    model_inference         5.00%     500.000us       100.00%     "
            " 10.000ms      10.000ms           0 b           0 b             "
            "1  \n"
            "-------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ------------  "
            "------------  \n"
            "Self CPU time total: 10.000ms\n");

  std::vector<FunctionEventAvg> rows2 = {
      row("ember::add", 2, 3.5, 3.5, {{2, 3}, {2, 3}, {}}, 1024, 512),
      row("a_very_long_user_scope_name_that_goes_beyond_the_limit_of_the_"
          "column",
          1, 1234567.0, 2345678.5, {}, -2048, 3 * 1024 * 1024)};
  std::string sep = "-------------------------------------------------------  "
                    "------------  ------------  ------------  ------------  "
                    "------------  ------------  ------------  ------------  "
                    "------------------------  \n";
  EXPECT_EQ(EventList(rows2, true).table("", 100, 55, 80, "ember profile"),
            std::string(193, '=') + "\n" + "ember profile\n" + sep +
                "                                                   Name    "
                "Self CPU %      Self CPU   CPU total %     CPU total  CPU "
                "time avg       CPU Mem  Self CPU Mem    # of Calls          "
                "    Input Shapes  \n" +
                sep +
                "                                             ember::add      "
                "   0.00%       3.500us         0.00%       3.500us       "
                "1.750us       1.00 Kb         512 b             2      [[2, "
                "3], [2, 3], []]  \n"
                "a_very_long_user_scope_name_that_goes_beyond_the_lim...      "
                " 100.00%        1.235s       190.00%        2.346s        "
                "2.346s      -2.00 Kb       3.00 Mb             1            "
                "            []  \n" +
                sep + "Self CPU time total: 1.235s\n");

  // Narrow name and shape columns cut their text.
  EXPECT_EQ(EventList(rows2, false).table("cpu_time", 100, 20, 10),
            "--------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ----------  \n"
            "                Name    Self CPU %      Self CPU   CPU total %    "
            " CPU total  CPU time avg    # of Calls  Input Shapes  \n"
            "--------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ----------  \n"
            "a_very_long_user_...       100.00%        1.235s       190.00%    "
            "    2.346s        2.346s             1          []  \n"
            "          ember::add         0.00%       3.500us         0.00%    "
            "   3.500us       1.750us             2  [[2, 3], [  \n"
            "--------------------  ------------  ------------  ------------  "
            "------------  ------------  ------------  ----------  \n"
            "Self CPU time total: 1.235s\n");
}

TEST(Profiler, SortKeysRowLimitAndTopLevelRows) {
  Tensor a = randn({32, 32});
  profile prof;
  {
    auto g = prof.guard();
    record_function scope("step");
    for (int i = 0; i < 5; ++i)
      a = add(a, a);
    for (int i = 0; i < 3; ++i)
      a = mul(a, a);
    Tensor s = neg(a);
  }
  EventList avg = prof.key_averages();
  auto rows = dataRows(avg.table("count"));
  ASSERT_EQ(rows.size(), avg.size());
  EXPECT_EQ(firstWord(rows[0]), "ember::add");
  EXPECT_EQ(firstWord(rows[1]), "ember::mul");
  // Every sort key orders rows by that value, descending.
  auto value = [&](const std::string &name, const std::string &key) {
    const FunctionEventAvg &r = avg.find(name);
    if (key == "count")
      return double(r.count);
    if (key == "cpu_time")
      return r.cpu_time();
    if (key == "cpu_time_total")
      return r.cpu_time_total;
    if (key == "self_cpu_time_total")
      return r.self_cpu_time_total;
    if (key == "cpu_memory_usage")
      return double(r.cpu_memory_usage);
    return double(r.self_cpu_memory_usage);
  };
  for (const char *key :
       {"count", "cpu_time", "cpu_time_total", "self_cpu_time_total",
        "cpu_memory_usage", "self_cpu_memory_usage"}) {
    auto r = dataRows(avg.table(key));
    ASSERT_EQ(r.size(), avg.size()) << key;
    for (size_t i = 1; i < r.size(); ++i)
      EXPECT_GE(value(firstWord(r[i - 1]), key), value(firstWord(r[i]), key))
          << key;
  }
  EXPECT_EQ(firstWord(dataRows(avg.table("cpu_time_total"))[0]), "step");
  // row_limit.
  EXPECT_EQ(dataRows(avg.table("count", 2)).size(), 2u);
  EXPECT_EQ(dataRows(avg.table("count", 0)).size(), 0u);
  EXPECT_EQ(dataRows(avg.table("count", -1)).size(), avg.size());
  // Only rows without a parent.
  std::string top = avg.table("", 100, 55, 80, "", true);
  EXPECT_NE(top.find("This report only display top-level ops statistics"),
            std::string::npos);
  auto topRows = dataRows(top);
  ASSERT_EQ(topRows.size(), 1u) << top;
  EXPECT_EQ(firstWord(topRows[0]), "step");
  // Unknown keys list the valid ones.
  EXPECT_EMBER_ERROR(avg.table("gpu_time"),
                     "unknown sort key; valid keys are cpu_time, "
                     "cpu_time_total, self_cpu_time_total, device_time, "
                     "device_time_total, self_device_time_total, cuda_time, "
                     "cuda_time_total, self_cuda_time_total, cpu_memory_usage, "
                     "self_cpu_memory_usage, count");
  EXPECT_EMBER_ERROR(avg.find("nope"), "no row named 'nope'");
}

TEST(Profiler, ChromeTraceIsValidJsonWithEscapedNames) {
  Tensor a = randn({3, 4});
  // Quotes, backslashes, control characters, UTF-8 and a stray byte.
  std::string weird = "we\"ird\\na\nme\t\x01 caf\xc3\xa9 \xff!";
  profile prof({ProfilerActivity::CPU}, /*record_shapes=*/true,
               /*profile_memory=*/true);
  {
    auto g = prof.guard();
    record_function scope(weird);
    Tensor b = add(a, a);
  }
  std::string path = ::testing::TempDir() + "ember_profiler_trace.json";
  prof.export_chrome_trace(path);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string json = ss.str();
  JsonChecker checker(json);
  ASSERT_TRUE(checker.parse()) << checker.error() << "\n" << json;
  EXPECT_EQ(json, prof.chrome_trace_json());
  auto has = [&](const std::string &s) {
    return std::find(checker.strings.begin(), checker.strings.end(), s) !=
           checker.strings.end();
  };
  EXPECT_TRUE(has("traceEvents"));
  EXPECT_TRUE(has("ember::add"));
  EXPECT_TRUE(has("Input Dims"));
  EXPECT_TRUE(has("user_annotation"));
  EXPECT_TRUE(has("[memory]"));
  EXPECT_TRUE(has("Total Allocated"));
  // The name comes back intact, the invalid byte as U+FFFD.
  EXPECT_TRUE(has("we\"ird\\na\nme\t\x01 caf\xc3\xa9 \xef\xbf\xbd!")) << json;
  EXPECT_NE(json.find("\"Input Dims\": [[3, 4], [3, 4], []]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"Input type\": [\"float32\", \"float32\", \"Scalar\"]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"ph\": \"X\""), std::string::npos);
  // Python's json module agrees, where there is one.
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    std::string cmd =
        "python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));"
        " assert any(e[\"name\"]==\"ember::add\" for e in "
        "d[\"traceEvents\"])' " +
        path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << json;
  }
  std::remove(path.c_str());
  EXPECT_EMBER_ERROR(prof.export_chrome_trace("/nonexistent-dir/trace.json"),
                     "could not open '/nonexistent-dir/trace.json'");
}

TEST(Profiler, ProfileMemoryAttributesAllocationsToOps) {
  Tensor x = randn({1024, 1024}); // 4 MiB results: their own size class
  constexpr int64_t k4MiB = int64_t(4) << 20;
  profile prof({ProfilerActivity::CPU}, /*record_shapes=*/false,
               /*profile_memory=*/true);
  Tensor kept;
  {
    auto g = prof.guard();
    kept = add(x, x); // allocates 4 MiB that outlive the profile
    {
      record_function scope("scope");
      Tensor t = mul(x, x); // allocated and freed inside the scope
    }
    kept = Tensor(); // freed outside every event: a "[memory]" row
  }
  EventList avg = prof.key_averages();
  EXPECT_EQ(avg.find("ember::add").cpu_memory_usage, k4MiB);
  EXPECT_EQ(avg.find("ember::add").self_cpu_memory_usage, k4MiB);
  EXPECT_EQ(avg.find("ember::mul").self_cpu_memory_usage, k4MiB);
  // The scope's total holds the mul's allocation and its own free.
  EXPECT_EQ(avg.find("scope").cpu_memory_usage, 0);
  EXPECT_EQ(avg.find("scope").self_cpu_memory_usage, -k4MiB);
  EXPECT_EQ(avg.find("[memory]").cpu_memory_usage, -k4MiB);
  std::string t = avg.table("cpu_memory_usage");
  EXPECT_NE(t.find("CPU Mem  Self CPU Mem"), std::string::npos) << t;
  EXPECT_NE(t.find("4.00 Mb"), std::string::npos) << t;
  EXPECT_NE(t.find("-4.00 Mb"), std::string::npos) << t;
  EXPECT_EQ(firstWord(dataRows(t)[0]), "ember::add") << t;

  // Without profile_memory: no columns, no memory.
  profile plain;
  {
    auto g = plain.guard();
    Tensor y = add(x, x);
  }
  EXPECT_EQ(plain.key_averages().find("ember::add").cpu_memory_usage, 0);
  EXPECT_EQ(plain.key_averages().table().find("CPU Mem"), std::string::npos);
}

TEST(Profiler, StoppedMidScopeDoesNotCrash) {
  Tensor a = randn({8});
  profile prof;
  prof.start();
  {
    record_function open("open");
    Tensor b = add(a, a);
    prof.stop(); // "open" is still open
    Tensor c = mul(a, a);
  } // the guard ends after the stop: nothing happens
  const FunctionEvent *open = findEvent(prof.events(), "open");
  const FunctionEvent *addE = findEvent(prof.events(), "ember::add");
  ASSERT_TRUE(open && addE);
  EXPECT_EQ(findEvent(prof.events(), "ember::mul"), nullptr);
  EXPECT_EQ(addE->cpu_parent, open->id);
  EXPECT_GE(open->cpu_time_total, addE->cpu_time_total);

  // A guard from an old session that ends inside a new one is ignored.
  profile first, second;
  first.start();
  {
    record_function old("old");
    first.stop();
    second.start();
    Tensor d = add(a, a);
  }
  second.stop();
  ASSERT_EQ(second.events().size(), 1u);
  EXPECT_EQ(second.events()[0].name, "ember::add");
  EXPECT_EQ(second.events()[0].cpu_parent, -1);

  // A guard that began before the profiler records nothing.
  profile third;
  {
    record_function early("early");
    third.start();
    Tensor d = add(a, a);
  }
  third.stop();
  ASSERT_EQ(third.events().size(), 1u);
  EXPECT_EQ(third.events()[0].name, "ember::add");

  // A profile destroyed while running stops itself.
  {
    profile dropped;
    dropped.start();
  }
  EXPECT_FALSE(active());
}

TEST(Profiler, AnOpThatThrowsClosesItsEvent) {
  Tensor a = randn({2, 3}), b = randn({4, 5});
  profile prof;
  {
    auto g = prof.guard();
    EXPECT_THROW(add(a, b), Error);
    Tensor c = mul(a, a);
  }
  const FunctionEvent *addE = findEvent(prof.events(), "ember::add");
  const FunctionEvent *mulE = findEvent(prof.events(), "ember::mul");
  ASSERT_TRUE(addE && mulE);
  EXPECT_EQ(mulE->cpu_parent, -1); // not left inside the failed add
  EXPECT_LE(addE->end_us, mulE->start_us);
}

TEST(Profiler, EventsFromSeveralThreads) {
  Tensor a = randn({16});
  profile prof;
  {
    auto g = prof.guard();
    auto work = [&] {
      record_function scope("worker");
      for (int i = 0; i < 10; ++i)
        Tensor b = add(a, a);
    };
    std::thread t1(work), t2(work);
    t1.join();
    t2.join();
  }
  EventList avg = prof.key_averages();
  EXPECT_EQ(avg.find("ember::add").count, 20);
  EXPECT_EQ(avg.find("worker").count, 2);
  std::set<uint64_t> threads;
  for (const FunctionEvent &e : prof.events()) {
    threads.insert(e.thread);
    if (e.name == "ember::add") { // parents are on the same thread
      EXPECT_EQ(byId(prof.events(), e.cpu_parent).thread, e.thread);
    }
  }
  EXPECT_EQ(threads.size(), 2u);
}

TEST(Profiler, SessionsStartAndStopWhileAnotherThreadRuns) {
  // A thread keeps running ops (and allocating) while the main thread
  // starts and stops sessions: its buffer is created, closed and read under
  // their locks (TSan checks); what it records lands in some session.
  Tensor a = randn({16});
  std::atomic<bool> done{false};
  std::thread worker([&] {
    while (!done) {
      record_function scope("worker");
      Tensor b = add(a, a);
    }
  });
  int64_t muls = 0;
  for (int i = 0; i < 20; ++i) {
    profile prof({ProfilerActivity::CPU}, false, /*profile_memory=*/true);
    prof.start();
    Tensor c = mul(a, a);
    prof.stop();
    muls += prof.key_averages().find("ember::mul").count;
  }
  done = true;
  worker.join();
  EXPECT_EQ(muls, 20);
}

TEST(Profiler, Misuse) {
  profile prof;
  prof.start();
  profile other;
  EXPECT_EMBER_ERROR(other.start(), "a profiler is already running");
  EXPECT_EMBER_ERROR(prof.start(), "already running");
  EXPECT_EMBER_ERROR(prof.key_averages(), "the profiler is still running");
  EXPECT_EMBER_ERROR(prof.events(), "still running");
  EXPECT_EMBER_ERROR(prof.export_chrome_trace("x.json"), "still running");
  prof.stop();
  EXPECT_EMBER_ERROR(prof.stop(), "not running");
  // Results of a profile that never ran.
  profile never;
  EXPECT_EMBER_ERROR(never.events(), "the profiler has not run");
  EXPECT_EMBER_ERROR(never.key_averages(), "has not run");
  EXPECT_EMBER_ERROR(never.chrome_trace_json(), "has not run");
  // The options struct and an empty activity list (the CPU).
  profile viaOptions(ProfileOptions{
      .activities = {}, .record_shapes = true, .profile_memory = true});
  EXPECT_EQ(viaOptions.options().activities,
            std::vector<ProfilerActivity>{ProfilerActivity::CPU});
  EXPECT_TRUE(viaOptions.options().record_shapes);
  // A restarted profile drops its earlier results.
  Tensor a = randn({4});
  {
    auto g = prof.guard();
    Tensor b = add(a, a);
  }
  {
    auto g = prof.guard();
    Tensor b = mul(a, a);
  }
  ASSERT_EQ(prof.events().size(), 1u);
  EXPECT_EQ(prof.events()[0].name, "ember::mul");
}

// --- ProfilerActivity::CUDA (Note [Device activity] in runtime/Profiler.h) --

namespace {
/// A device that takes 5 us for each piece of work, one after another: the
/// k-th mark of a session is at its first mark's time + 5 us * k.
class FakeDeviceTimer : public DeviceTimer {
public:
  void *mark(Device, uint64_t) override {
    std::lock_guard<std::mutex> g(mu_);
    if (count_ == 0)
      base_ = now_ns();
    ++live_;
    return new int64_t(base_ + 5000 * count_++);
  }
  int64_t time_ns(void *m) override {
    std::unique_ptr<int64_t> t(static_cast<int64_t *>(m));
    --live_;
    return *t;
  }
  void release(void *m) override {
    delete static_cast<int64_t *>(m);
    --live_;
  }
  void reset() override { count_ = 0; }
  int live() const { return live_; }

private:
  std::mutex mu_;
  int64_t base_ = 0, count_ = 0;
  std::atomic<int> live_{0};
};

/// Installs a fake device timer for one test.
struct FakeDevice {
  FakeDeviceTimer timer;
  FakeDevice() { profiler::detail::set_device_timer_for_testing(&timer); }
  ~FakeDevice() { profiler::detail::set_device_timer_for_testing(nullptr); }
};
} // namespace

TEST(Profiler, DeviceWorkIsTimedAndCharged) {
  FakeDevice fake;
  const Device gpu(kCUDA, 0);
  profile prof({ProfilerActivity::CPU, ProfilerActivity::CUDA});
  {
    auto g = prof.guard();
    record_function step("step");
    {
      record_function op("ember::fake_op", RecordScope::FUNCTION);
      record_device k("kernel_a", gpu, 7);
    }
    { record_device k("kernel_a", gpu, 7); }
    { record_device m("Memcpy HtoD (Pageable -> Device)", gpu, 9); }
    Tensor a = randn({4});
    Tensor b = add(a, a); // CPU work: no device time
  }
  EXPECT_EQ(fake.timer.live(), 0); // every mark read
  EventList rows = prof.key_averages();
  const FunctionEventAvg &kernel = rows.find("kernel_a");
  EXPECT_EQ(kernel.count, 2);
  EXPECT_EQ(kernel.device_type, kCUDA);
  EXPECT_DOUBLE_EQ(kernel.device_time_total, 10.0);
  EXPECT_DOUBLE_EQ(kernel.self_device_time_total, 10.0);
  EXPECT_DOUBLE_EQ(kernel.cpu_time_total, 0.0);
  const FunctionEventAvg &op = rows.find("ember::fake_op");
  EXPECT_DOUBLE_EQ(op.self_device_time_total, 5.0);
  EXPECT_DOUBLE_EQ(op.device_time_total, 5.0);
  const FunctionEventAvg &s = rows.find("step");
  EXPECT_DOUBLE_EQ(s.self_device_time_total, 10.0); // kernel_a and the copy
  EXPECT_DOUBLE_EQ(s.device_time_total, 15.0);
  EXPECT_DOUBLE_EQ(rows.find("ember::add").device_time_total, 0.0);
  EXPECT_DOUBLE_EQ(rows.self_device_time_total(), 30.0);
  // The device events: on the device's clock, after their launch, with
  // their stream and their launching op.
  int device_events = 0;
  for (const FunctionEvent &e : prof.events()) {
    if (e.device_type != kCUDA)
      continue;
    ++device_events;
    EXPECT_EQ(e.device_index, 0);
    // (times in microseconds since the session's start: the difference of
    // two such doubles is 5 within their rounding, not to 4 ulps of 5)
    EXPECT_NEAR(e.end_us - e.start_us, 5.0, 1e-6);
    auto launcher = std::find_if(
        prof.events().begin(), prof.events().end(),
        [&](const FunctionEvent &c) { return c.id == e.launched_by; });
    ASSERT_NE(launcher, prof.events().end());
    EXPECT_TRUE(launcher->name == "step" || launcher->name == "ember::fake_op")
        << launcher->name;
    EXPECT_GE(e.start_us, launcher->start_us);
  }
  EXPECT_EQ(device_events, 3);
  // The table: PyTorch's CUDA columns and footer.
  std::string t = rows.table("device_time_total");
  EXPECT_NE(t.find("Self CUDA %"), std::string::npos) << t;
  EXPECT_NE(t.find("CUDA time avg"), std::string::npos) << t;
  EXPECT_NE(t.find("Self CUDA time total: 30.000us"), std::string::npos) << t;
  std::istringstream lines(t);
  std::string line;
  for (int i = 0; i < 4 && std::getline(lines, line);)
    ++i; // the first row after the header and separators
  EXPECT_NE(line.find("  step  "), std::string::npos) << t; // 15 us
  EXPECT_NE(t.find("kernel_a         0.00%       0.000us"), std::string::npos)
      << t;
  EXPECT_EQ(rows.table("cuda_time_total"), rows.table("device_time_total"));
  // The trace: kernels and copies on the device's track, correlated.
  std::string json = prof.chrome_trace_json();
  JsonChecker checker(json);
  ASSERT_TRUE(checker.parse()) << checker.error();
  EXPECT_NE(json.find("\"cat\": \"kernel\", \"name\": \"kernel_a\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cat\": \"gpu_memcpy\""), std::string::npos);
  EXPECT_NE(json.find("CUDA device 0"), std::string::npos);
  EXPECT_NE(json.find("\"correlation\": "), std::string::npos);
}

TEST(Profiler, CudaActivityWithoutAGpuRecordsTheCpu) {
  if (cuda::is_available())
    GTEST_SKIP() << "this machine has a GPU: Cuda.ProfilerTimesKernels "
                    "(test_cuda_ops) covers it";
  profile prof({ProfilerActivity::CPU, ProfilerActivity::CUDA});
  Tensor a = randn({4});
  {
    auto g = prof.guard();
    Tensor b = mul(a, a);
    // (device work submitted without a device timer records nothing)
    record_device k("kernel", Device(kCUDA, 0), 0);
  }
  ASSERT_EQ(prof.events().size(), 1u);
  EXPECT_EQ(prof.events()[0].name, "ember::mul");
  std::string t = prof.key_averages().table();
  EXPECT_EQ(t.find("CUDA"), std::string::npos) << t;
}

TEST(Profiler, DeviceScopesOpenAtTheStopAreClosed) {
  FakeDevice fake;
  profile prof({ProfilerActivity::CUDA});
  prof.start();
  auto k = std::make_unique<record_device>("open", Device(kCUDA, 0), 1);
  prof.stop();
  k.reset(); // ends after the stop: its mark is released, not leaked
  EXPECT_EQ(fake.timer.live(), 0);
  ASSERT_EQ(prof.events().size(), 1u);
  EXPECT_EQ(prof.events()[0].name, "open");
  EXPECT_GE(prof.events()[0].device_time_total, 0.0);
}

TEST(Profiler, DeviceActivityAloneShowsTheDeviceWork) {
  // As torch.profiler: without ProfilerActivity::CPU the CPU ops are not
  // rows, the work they launched is.
  FakeDevice fake;
  profile prof({ProfilerActivity::CUDA});
  Tensor a = randn({4});
  {
    auto g = prof.guard();
    Tensor b = add(a, a);
    record_device k("kernel_b", Device(kCUDA, 0), 3);
  }
  ASSERT_EQ(prof.events().size(), 1u);
  EXPECT_EQ(prof.events()[0].name, "kernel_b");
  EXPECT_EQ(prof.events()[0].device_type, kCUDA);
}
