// The check of docs/bad-input.md against behaviour, and the binary's main().
//
// BadInputTable.MatchesBehaviour reads the table and compares it, both ways, with what the
// BadInputTest cases of the other tests/bad_input_*.cpp files observed (bad_input.hpp records
// it). Each row of the table is `| `id` | call | misuse | `Result` | `piece` … `piece` |`. The test
// fails when a row's id was observed by no case, when a case recorded an id that has no row, or
// when an observation's Result differs from the row's or its message does not contain the row's
// pieces in order (exactly, case included). It must run after the BadInputTest cases: main()
// registers it after all of them, whatever order the linker put the files in, so its suite runs
// last. When some cases did not run (a --gtest_filter, a skip), rows without observations are
// listed but not failed, and under --gtest_shuffle it skips if it ran first. meson passes the
// table's path (BATON_BAD_INPUT_TABLE); the environment variable of the same name overrides it.
// BATON_BAD_INPUT_PRINT=1 prints every observation (id | Result | message).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bad_input.hpp"

namespace baton_test {
namespace {

struct TableRow {
  int line = 0;
  std::string id, call, misuse, result;
  std::vector<std::string> message;  // the pieces the message contains, in this order
};

std::string trim(std::string_view text) {
  size_t b = text.find_first_not_of(" \t\r");
  size_t e = text.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string() : std::string(text.substr(b, e - b + 1));
}

// The content of a cell that is one code span (`text`).
bool codeSpan(const std::string& cell, std::string* content) {
  if (cell.size() < 2 || cell.front() != '`' || cell.back() != '`') return false;
  *content = cell.substr(1, cell.size() - 2);
  return content->find('`') == std::string::npos;
}

// The contents of a cell made of one or more non-empty code spans, separated by spaces or "…".
bool codeSpans(const std::string& cell, std::vector<std::string>* spans) {
  spans->clear();
  size_t i = 0;
  while (i < cell.size()) {
    if (cell[i] == '`') {
      size_t end = cell.find('`', i + 1);
      if (end == std::string::npos || end == i + 1) return false;
      spans->push_back(cell.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (cell[i] == ' ') {
      ++i;
    } else if (cell.compare(i, 3, "\xE2\x80\xA6") == 0) {  // …
      i += 3;
    } else {
      return false;
    }
  }
  return !spans->empty();
}

// Whether `message` contains every piece, in order.
bool containsInOrder(const std::string& message, const std::vector<std::string>& pieces) {
  size_t at = 0;
  for (const std::string& piece : pieces) {
    at = message.find(piece, at);
    if (at == std::string::npos) return false;
    at += piece.size();
  }
  return true;
}

std::string quotePieces(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += (out.empty() ? "\"" : " ... \"") + piece + "\"";
  return out;
}

// Reads the rows of every table whose first cell is a code span; header and separator rows
// (whose first cell is not) are skipped. Malformed rows are reported in *errors.
std::vector<TableRow> readTable(const std::string& path, std::vector<std::string>* errors) {
  std::vector<TableRow> rows;
  std::ifstream in(path);
  if (!in) {
    errors->push_back("cannot open " + path);
    return rows;
  }
  std::set<std::string> resultNames;
  for (int32_t code = -64; code <= 64; ++code)
    resultNames.insert(baton::resultName(static_cast<Result>(code)));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trim(line);
    if (text.empty() || text.front() != '|') continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '|') {
        cell += '|';
        ++i;
      } else if (text[i] == '|') {
        cells.push_back(trim(cell));
        cell.clear();
      } else {
        cell += text[i];
      }
    }
    if (!trim(cell).empty()) cells.push_back(trim(cell));  // a row without its closing '|'
    if (cells.empty() || cells[0].empty() || cells[0].front() != '`') continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    TableRow row;
    row.line = number;
    if (cells.size() != 5 || !codeSpan(cells[0], &row.id) || !codeSpan(cells[3], &row.result) ||
        !codeSpans(cells[4], &row.message)) {
      errors->push_back(where +
                        "a row must be | `id` | call | misuse | `Result` | `piece` … `piece` |");
      continue;
    }
    row.call = cells[1];
    row.misuse = cells[2];
    if (!resultNames.count(row.result) || row.result.rfind("Result(", 0) == 0)
      errors->push_back(where + "`" + row.id + "`: \"" + row.result + "\" is not a Result name");
    rows.push_back(row);
  }
  return rows;
}

// The body of BadInputTable.MatchesBehaviour (main() below registers it).
void checkTableMatchesBehaviour() {
  std::string path = BATON_BAD_INPUT_TABLE;
  if (const char* env = std::getenv("BATON_BAD_INPUT_TABLE"); env && *env) path = env;

  // Did every BadInputTest case run before this one?
  std::vector<std::string> notRun, notYetRun;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    if (std::string(suite.name()) != "BadInputTest") continue;
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(j);
      const std::string name = std::string(suite.name()) + "." + info.name();
      bool ran;
      {
        std::lock_guard<std::mutex> lock(observed().mutex);
        ran = observed().testsRun.count(name) > 0;
      }
      if (!info.should_run())
        notRun.push_back(name + " (filtered out)");
      else if (!ran)
        notYetRun.push_back(name);
      else if (info.result()->Skipped())
        notRun.push_back(name + " (skipped)");
    }
  }
  if (!notYetRun.empty())
    GTEST_SKIP() << "this check ran before " << notYetRun.size()
                 << " BadInputTest cases (--gtest_shuffle?); it needs to run after them";

  std::vector<std::string> errors;
  const std::vector<TableRow> rows = readTable(path, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  ASSERT_FALSE(rows.empty()) << path << " has no rows";

  std::map<std::string, const TableRow*> byId;
  for (const TableRow& row : rows) {
    auto [it, inserted] = byId.emplace(row.id, &row);
    EXPECT_TRUE(inserted) << path << ":" << row.line << ": id `" << row.id
                          << "` is already the row of line " << it->second->line;
  }

  std::map<std::string, std::vector<Observation>> seen;
  {
    std::lock_guard<std::mutex> lock(observed().mutex);
    seen = observed().byId;
  }
  size_t observations = 0;
  for (const auto& [id, list] : seen) {
    observations += list.size();
    auto it = byId.find(id);
    if (it == byId.end()) {
      ADD_FAILURE() << "case `" << id << "` has no row in " << path << "; it observed\n  "
                    << list.front().where << "\n  -> " << resultName(list.front().result) << ": "
                    << list.front().message << "\nadd a row such as:\n| `" << id
                    << "` | call | misuse | `" << resultName(list.front().result)
                    << "` | `a stable piece of the message` |";
      continue;
    }
    const TableRow& row = *it->second;
    for (const Observation& o : list) {
      EXPECT_EQ(row.result, resultName(o.result))
          << path << ":" << row.line << ": row `" << id << "` says " << row.result << ", but "
          << o.where << " returned " << resultName(o.result) << ": " << o.message;
      EXPECT_TRUE(containsInOrder(o.message, row.message))
          << path << ":" << row.line << ": row `" << id << "` says the message contains "
          << quotePieces(row.message) << ", but " << o.where << " got: " << o.message;
    }
  }
  // BATON_BAD_INPUT_PRINT=1 lists every observation, for writing rows.
  if (envUint("BATON_BAD_INPUT_PRINT", 0)) {
    for (const auto& [id, list] : seen)
      for (const Observation& o : list)
        std::cout << id << " | " << resultName(o.result) << " | " << o.message << "\n";
  }
  std::vector<std::string> unobserved;
  for (const TableRow& row : rows)
    if (!seen.count(row.id)) unobserved.push_back(row.id);
  for (const std::string& id : unobserved) {
    if (notRun.empty())
      ADD_FAILURE() << path << ":" << byId[id]->line << ": row `" << id
                    << "` was observed by no case in tests/bad_input_*.cpp: add a case that "
                       "records it, or remove the row";
  }
  if (!notRun.empty() && !unobserved.empty()) {
    std::string list;
    for (const std::string& n : notRun) list += "\n  " + n;
    std::cout << "[ note     ] " << unobserved.size()
              << " rows not observed, not checked, because these cases did not run:" << list
              << "\n";
  }
  std::cout << "[ table    ] " << path << ": " << rows.size() << " rows, " << seen.size()
            << " ids observed by " << observations << " calls\n";
}

class TableTest : public ::testing::Test {
 public:
  void TestBody() override { checkTableMatchesBehaviour(); }
};

}  // namespace
}  // namespace baton_test

// gtest's own main, plus the table check registered after every statically registered test.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::RegisterTest("BadInputTable", "MatchesBehaviour", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> ::testing::Test* { return new baton_test::TableTest; });
  return RUN_ALL_TESTS();
}
