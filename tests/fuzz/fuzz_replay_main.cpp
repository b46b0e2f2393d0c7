// baton-fuzz-replay: runs the API fuzzer's inputs without libFuzzer (a plain g++ build), so that
// the committed seed corpus and every regression input run in `meson test`.
//
//   baton-fuzz-replay [--backends host,cuda] FILE|DIR...
//
// Each file (directories: every regular file in them, sorted) runs once per listed backend;
// a listed backend that does not load fails the run. Without --backends, byte 0 of each input
// (or BATON_FUZZ_BACKEND) chooses. A violation aborts with the input's trace; the file being
// run is printed first, so a failure names its input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace baton_fuzz {
extern std::string gBackendOverride;
int runOneInput(const uint8_t* data, size_t size);
}  // namespace baton_fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::string> backends;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backends" && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t start = 0; start <= list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        if (comma > start) backends.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (fs::is_directory(arg)) {
      std::vector<fs::path> inDir;
      for (const auto& entry : fs::directory_iterator(arg))
        // README.md and dot files describe the directory; they are not inputs.
        if (entry.is_regular_file() && entry.path().extension() != ".md" &&
            entry.path().filename().string()[0] != '.')
          inDir.push_back(entry.path());
      std::sort(inDir.begin(), inDir.end());
      files.insert(files.end(), inDir.begin(), inDir.end());
    } else if (fs::is_regular_file(arg)) {
      files.emplace_back(arg);
    } else {
      std::fprintf(stderr, "baton-fuzz-replay: %s: no such file or directory\n", arg.c_str());
      return 2;
    }
  }
  if (backends.empty()) backends.push_back("");
  size_t runs = 0;
  for (const std::string& backend : backends) {
    baton_fuzz::gBackendOverride = backend;
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay %s on %s (%zu bytes)\n", file.c_str(),
                   backend.empty() ? "byte 0's backend" : backend.c_str(), data.size());
      baton_fuzz::runOneInput(data.data(), data.size());
      ++runs;
    }
  }
  std::printf("baton-fuzz-replay: %zu inputs x %zu backends: %zu runs, no violation\n",
              files.size(), backends.size(), runs);
  return 0;
}
