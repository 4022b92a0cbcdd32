#pragma once
// What a C++ test program does when its reference is missing (docs/model_testing.md,
// "References"); the C++ side of tests/common/reference_skip.py, with the same rule:
//   * on a developer's partial machine: one line "<name>: SKIP: <reason> (<hint>)" and exit
//     status 77, which CTest reports as Skipped (the test sets SKIP_RETURN_CODE 77);
//   * with WEFT_REQUIRE_REFERENCES=1 in the environment (exported by .ci/run, so in CI): one
//     line "<name>: FAIL: ..." and exit status 1.
// A reference is a package's module or a file it installs (the fortune corpus); a missing GPU
// is not one (the gpu tests keep skipping).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace weft_test {

inline constexpr int skip_return_code = 77;

/// Whether WEFT_REQUIRE_REFERENCES=1 (a missing reference fails) is set.
inline bool references_required() {
  const char* v = std::getenv("WEFT_REQUIRE_REFERENCES");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

/// The reference `reason` names is missing: one line, then exit 77 (skip) or, under
/// WEFT_REQUIRE_REFERENCES=1, exit 1.
[[noreturn]] inline void reference_unavailable(const std::string& name, const std::string& reason,
                                               const std::string& hint = "") {
  const std::string fix = hint.empty() ? "" : " (" + hint + ")";
  std::fflush(stdout);
  if (references_required()) {
    std::printf("%s: FAIL: %s%s; WEFT_REQUIRE_REFERENCES=1 makes a missing reference a failure\n", name.c_str(),
                reason.c_str(), fix.c_str());
    std::fflush(stdout);
    std::exit(1);
  }
  std::printf("%s: SKIP: %s%s\n", name.c_str(), reason.c_str(), fix.c_str());
  std::fflush(stdout);
  std::exit(skip_return_code);
}

/// A reference file or directory exists, or reference_unavailable.
inline void require_path(const std::string& name, const std::filesystem::path& p, const std::string& hint = "") {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) reference_unavailable(name, "'" + p.string() + "' does not exist", hint);
}

}  // namespace weft_test
