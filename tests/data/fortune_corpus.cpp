// text_corpus on the system's fortune(6) corpus (Debian's fortunes-min and fortunes, which
// run.sh installs): the `fortunes` file with fortune_records against an independent oracle
// (the file's text with every "\n%\n" turned into "\n\n"), and every file of the directory
// loaded at once (the docs/data.md snippet). Without the corpus it skips visibly (77, one line
// naming the missing path), or fails under WEFT_REQUIRE_REFERENCES=1 (CI): tests/common/reference_skip.hpp.
//   fortune_corpus [DIR]   DIR defaults to /usr/share/games/fortunes
#include "weft/data/loader.hpp"

#include "../common/reference_skip.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int failures = 0, checks = 0;
void check(bool ok, const char* what) {
  ++checks;
  if (!ok) ++failures, std::printf("fortune_corpus: FAILED: %s\n", what);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::printf("usage: fortune_corpus [DIR]\n");
    return 2;
  }
  const std::filesystem::path dir = argc == 2 ? argv[1] : "/usr/share/games/fortunes";
  const std::string hint = "apt-get install fortunes-min fortunes";
  weft_test::require_path("fortune_corpus", dir, hint);
  weft_test::require_path("fortune_corpus", dir / "fortunes", hint);

  // ---- the `fortunes` file: '%' lines become record separators ----
  const std::filesystem::path p = dir / "fortunes";
  const auto c = weft::text_corpus::load(p, {.fortune_records = true});
  std::string expected = replace_all(read_file(p), "\n%\n", "\n\n");
  check(!expected.empty(), "the fortunes file is not empty");
  check(weft::byte_tokenizer::decode(c.tokens()) == expected, "text_corpus(fortunes) = the file with '%' lines as blank lines");

  // ---- every file of the directory ----
  // example-begin data-fortunes
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink() && e.path().extension() != ".dat")  // *.u8 are symlinks
      paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());            // directory order is not deterministic
  auto corpus = weft::text_corpus::load(paths, {.fortune_records = true});
  // example-end data-fortunes
  check(paths.size() >= 2, "the directory holds several fortune files");
  std::uintmax_t bytes = 0;
  for (const auto& f : paths) bytes += std::filesystem::file_size(f);
  check(corpus.size() > 0, "the whole corpus has tokens");
  check(corpus.size() <= bytes, "never more tokens than bytes (each '%' line becomes '\\n')");
  check(corpus.size() > c.size(), "the whole corpus is larger than one of its files");

  std::printf("fortune_corpus: %zu files, %ju bytes, %zu tokens; %d of %d checks failed\n", paths.size(), bytes,
              corpus.size(), failures, checks);
  return failures == 0 ? 0 : 1;
}
