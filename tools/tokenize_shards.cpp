/*
 * tokenize_shards — a directory of text files -> token shards (nanoGPT .bin or llm.c).
 *
 *   tokenize_shards --input DIR --output DIR [--tokenizer byte|gpt2 --vocab vocab.json
 *                   --merges merges.txt] [--format llmc|nanogpt] [--dtype u16|u32]
 *                   [--shard-tokens N] [--prefix NAME] [--ext .txt,...] [--skip-ext .dat,...]
 *                   [--no-eot] [--threads N] [--quiet]
 *
 * Files are read in sorted path order (recursively; symbolic links are skipped), so the shards
 * are the same on every machine. With the GPT-2 tokenizer each file is one document and starts
 * with <|endoftext|> (llm.c's fineweb.py convention; --no-eot to leave it out). Text is read in
 * 4 MiB chunks cut at piece boundaries, encoded on --threads threads and written in order: the
 * tokens equal those of encoding each whole file at once. A progress bar with the rate in MB/s
 * goes to stderr, a summary line to stdout. Any error: one line on stderr, exit status 1 (2 for
 * a bad command line).
 */
#include <weft/data/bpe_tokenizer.hpp>      // bpe_tokenizer
#include <weft/data/gpt2_pretokenizer.hpp>  // gpt2_pretokenizer::complete_prefix
#include <weft/data/shard_writer.hpp>       // shard_writer
#include <weft/data/tokenizer.hpp>         // byte_tokenizer

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <unistd.h>

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  std::string tokenizer = "byte";
  std::string vocab, merges, input, output;
  weft::shard_writer_options writer{};
  std::vector<std::string> ext, skip_ext;
  bool eot = true, quiet = false;
  unsigned threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
};

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: tokenize_shards --input DIR --output DIR [options]\n"
               "  --input DIR          text files (recursively, sorted); a single file also works\n"
               "  --output DIR         where the shards go (created)\n"
               "  --tokenizer NAME     byte (vocabulary 256) | gpt2 (needs --vocab, --merges)  (default byte)\n"
               "  --vocab FILE         GPT-2 vocab.json / encoder.json\n"
               "  --merges FILE        GPT-2 merges.txt / vocab.bpe\n"
               "  --format NAME        llmc | nanogpt                                (default llmc)\n"
               "  --dtype NAME         u16 | u32                                     (default u16)\n"
               "  --shard-tokens N     tokens per shard file                         (default 100000000)\n"
               "  --prefix NAME        shard names NAME_000000.bin ...               (default shard)\n"
               "  --ext LIST           only files with these extensions, e.g. .txt,.md\n"
               "  --skip-ext LIST      not files with these extensions, e.g. .dat\n"
               "  --no-eot             gpt2: no <|endoftext|> before each file\n"
               "  --threads N          encoding threads                              (default min(4, cores))\n"
               "  --quiet              no progress bar\n"
               "  --help\n");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t c = s.find(',', i);
    out.push_back(s.substr(i, c == std::string::npos ? std::string::npos : c - i));
    if (c == std::string::npos) break;
    i = c + 1;
  }
  return out;
}

std::size_t parse_count(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n == 0 || v[0] == '-')
    throw usage_error(flag + " needs a positive integer, not '" + v + "'");
  return static_cast<std::size_t>(n);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (a == "--input") o.input = value();
    else if (a == "--output") o.output = value();
    else if (a == "--tokenizer") o.tokenizer = value();
    else if (a == "--vocab") o.vocab = value();
    else if (a == "--merges") o.merges = value();
    else if (a == "--prefix") o.writer.prefix = value();
    else if (a == "--shard-tokens") o.writer.shard_tokens = parse_count(a, value());
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::min<std::size_t>(parse_count(a, value()), 256));
    else if (a == "--ext") o.ext = split_list(value());
    else if (a == "--skip-ext") o.skip_ext = split_list(value());
    else if (a == "--no-eot") o.eot = false;
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--format") {
      const std::string v = value();
      if (v == "llmc") o.writer.format = weft::token_format::llmc;
      else if (v == "nanogpt") o.writer.format = weft::token_format::nanogpt;
      else throw usage_error("--format is llmc or nanogpt, not '" + v + "'");
    } else if (a == "--dtype") {
      const std::string v = value();
      if (v == "u16") o.writer.dtype = weft::token_dtype::u16;
      else if (v == "u32") o.writer.dtype = weft::token_dtype::u32;
      else throw usage_error("--dtype is u16 or u32, not '" + v + "'");
    } else {
      throw usage_error("unknown option '" + a + "' (see --help)");
    }
  }
  if (o.input.empty()) throw usage_error("--input DIR is required");
  if (o.output.empty()) throw usage_error("--output DIR is required");
  if (o.tokenizer != "byte" && o.tokenizer != "gpt2")
    throw usage_error("--tokenizer is byte or gpt2, not '" + o.tokenizer + "'");
  if (o.tokenizer == "gpt2" && (o.vocab.empty() || o.merges.empty()))
    throw usage_error("--tokenizer gpt2 needs --vocab vocab.json and --merges merges.txt");
  return o;
}

// The input files, sorted; one line of error if there are none.
std::vector<fs::path> input_files(const options& o) {
  std::error_code ec;
  if (fs::is_regular_file(o.input, ec)) return {o.input};
  if (!fs::is_directory(o.input, ec)) throw std::runtime_error("'" + o.input + "': no such file or directory");
  auto wanted = [&](const fs::path& p) {
    const std::string e = p.extension().string();
    if (!o.ext.empty() && std::find(o.ext.begin(), o.ext.end(), e) == o.ext.end()) return false;
    return std::find(o.skip_ext.begin(), o.skip_ext.end(), e) == o.skip_ext.end();
  };
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(o.input, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (!it->is_symlink() && it->is_regular_file() && wanted(it->path())) files.push_back(it->path());
  if (ec) throw std::runtime_error("'" + o.input + "': cannot list directory (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("'" + o.input + "': no input files");
  return files;
}

// ---- progress bar on stderr: [####......]  45.2%  12.3/27.0 MB  8.4 MB/s  1.2M tokens ----
class progress {
 public:
  progress(std::uint64_t total, bool on) : total_(total), on_(on), tty_(isatty(2) != 0), t0_(clock_type::now()) {}
  void update(std::uint64_t done, std::uint64_t tokens, bool final = false) {
    if (!on_) return;
    const auto now = clock_type::now();
    // A terminal gets 10 updates a second; a log file one a second and the last.
    const double gap = tty_ ? 0.1 : 1.0;
    if (!final && std::chrono::duration<double>(now - last_).count() < gap) return;
    last_ = now;
    const double s = std::max(1e-9, std::chrono::duration<double>(now - t0_).count());
    const double frac = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
    char bar[31];
    const int fill = static_cast<int>(frac * 30.0);
    for (int i = 0; i < 30; ++i) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    std::fprintf(stderr, "%s[%s] %5.1f%%  %.1f/%.1f MB  %.1f MB/s  %.2fM tokens%s", tty_ ? "\r" : "", bar, 100.0 * frac,
                 static_cast<double>(done) / 1e6, static_cast<double>(total_) / 1e6, static_cast<double>(done) / 1e6 / s,
                 static_cast<double>(tokens) / 1e6, tty_ && !final ? "" : "\n");
    std::fflush(stderr);
  }
  double seconds() const { return std::chrono::duration<double>(clock_type::now() - t0_).count(); }

 private:
  std::uint64_t total_;
  bool on_, tty_;
  clock_type::time_point t0_, last_{};
};

int run(const options& o) {
  const auto files = input_files(o);
  std::uint64_t total_bytes = 0;
  for (const auto& f : files) total_bytes += fs::file_size(f);

  std::optional<weft::bpe_tokenizer> bpe;
  std::int32_t eot = -1;
  if (o.tokenizer == "gpt2") {
    bpe.emplace(weft::bpe_tokenizer::load(o.vocab, o.merges));
    if (o.eot) {
      const auto id = bpe->token_id("<|endoftext|>");
      if (!id) throw std::runtime_error("'" + o.vocab + "' has no <|endoftext|> token; pass --no-eot");
      eot = *id;
    }
  }

  // Refuse to mix with shards of an earlier run.
  {
    const weft::shard_writer probe_names(o.output, o.writer);
    if (fs::exists(fs::path(o.output) / probe_names.shard_name(0)))
      throw std::runtime_error("'" + o.output + "' already holds " + probe_names.shard_name(0) +
                               "; choose another --output or --prefix");
  }
  weft::shard_writer writer(o.output, o.writer);
  progress bar(total_bytes, !o.quiet);

  // Encoding jobs run on up to `threads` threads; results are written in submission order.
  std::deque<std::future<std::vector<std::int32_t>>> pending;
  std::uint64_t done_bytes = 0;
  auto drain = [&](std::size_t keep) {
    while (pending.size() > keep) {
      const auto ids = pending.front().get();  // rethrows an encoding error
      pending.pop_front();
      writer.write(ids);
    }
  };
  auto submit = [&](std::string text) {
    const std::size_t n = text.size();
    if (bpe)
      pending.push_back(std::async(std::launch::async, [&bpe, t = std::move(text)] { return bpe->encode(t); }));
    else
      pending.push_back(std::async(std::launch::deferred, [t = std::move(text)] { return weft::byte_tokenizer::encode(t); }));
    drain(o.threads);
    done_bytes += n;
    bar.update(done_bytes, writer.tokens());
  };

  constexpr std::size_t chunk = 4u << 20;
  std::string carry;
  std::vector<char> buf(chunk);
  for (const auto& path : files) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("'" + path.string() + "': cannot open file");
    if (eot >= 0) {
      drain(0);
      const std::int32_t e[1] = {eot};
      writer.write(e);
    }
    carry.clear();
    for (;;) {
      const std::size_t got = std::fread(buf.data(), 1, buf.size(), f);
      const bool at_end = got < buf.size();
      carry.append(buf.data(), got);
      // Cut at a piece boundary (gpt2); the rest waits for the next chunk.
      const std::size_t cut = at_end || !bpe ? carry.size() : weft::gpt2_pretokenizer::complete_prefix(carry);
      if (cut > 0) {
        submit(carry.substr(0, cut));
        carry.erase(0, cut);
      }
      if (at_end) break;
    }
    const bool bad = std::ferror(f) != 0;
    std::fclose(f);
    if (bad) throw std::runtime_error("'" + path.string() + "': read error");
  }
  drain(0);
  writer.close();
  if (writer.tokens() == 0) throw std::runtime_error("'" + o.input + "': the input files are empty; no shard written");
  bar.update(done_bytes, writer.tokens(), true);
  const double s = bar.seconds();
  std::printf("tokenize_shards: %zu files, %.2f MB -> %llu tokens in %zu shards (%s, %s, %s) in %.2f s: %.2f MB/s\n",
              files.size(), static_cast<double>(total_bytes) / 1e6, static_cast<unsigned long long>(writer.tokens()),
              writer.files().size(), o.tokenizer.c_str(), std::string(weft::to_string(o.writer.format)).c_str(),
              std::string(weft::to_string(o.writer.dtype)).c_str(), s, static_cast<double>(total_bytes) / 1e6 / s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const usage_error& e) {
    std::fprintf(stderr, "tokenize_shards: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenize_shards: %s\n", e.what());
    return 1;
  }
}
