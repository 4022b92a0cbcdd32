// bpe_encode: the C++ side of bpe_crosscheck.py. Encodes documents with weft::bpe_tokenizer.
//   bpe_encode VOCAB_JSON MERGES_TXT IN OUT
// IN:  documents, each a little-endian uint32 byte length followed by the UTF-8 bytes.
// OUT: per document, a little-endian uint32 token count followed by int32 token ids.
// Also checks that decode(encode(doc)) == doc for every document (exit 1 otherwise).
// Prints the encoding rate in MB/s. Exit status: 0 ok, 1 mismatch, 2 bad usage or input.
#include <weft/data/bpe_tokenizer.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: bpe_encode VOCAB_JSON MERGES_TXT IN OUT\n");
    return 2;
  }
  try {
    const auto tok = weft::bpe_tokenizer::load(argv[1], argv[2]);
    std::FILE* in = std::fopen(argv[3], "rb");
    if (!in) throw std::runtime_error(std::string("cannot open ") + argv[3]);
    std::vector<std::string> docs;
    for (std::uint32_t len; std::fread(&len, 4, 1, in) == 1;) {
      std::string d(len, '\0');
      if (len && std::fread(d.data(), 1, len, in) != len) throw std::runtime_error("truncated input");
      docs.push_back(std::move(d));
    }
    std::fclose(in);
    std::vector<std::vector<std::int32_t>> out(docs.size());
    std::size_t bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < docs.size(); ++i) {
      tok.encode_into(docs[i], out[i]);
      bytes += docs[i].size();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int rc = 0;
    for (std::size_t i = 0; i < docs.size(); ++i)
      if (tok.decode(out[i]) != docs[i]) {
        std::fprintf(stderr, "bpe_encode: document %zu does not round-trip\n", i);
        rc = 1;
      }
    std::FILE* o = std::fopen(argv[4], "wb");
    if (!o) throw std::runtime_error(std::string("cannot write ") + argv[4]);
    for (const auto& ids : out) {
      const auto n = static_cast<std::uint32_t>(ids.size());
      std::fwrite(&n, 4, 1, o);
      std::fwrite(ids.data(), 4, ids.size(), o);
    }
    if (std::fclose(o) != 0) throw std::runtime_error("write error");
    std::printf("bpe_encode: %zu documents, %.2f MB in %.3f s: %.1f MB/s\n", docs.size(), bytes / 1e6, s, bytes / 1e6 / s);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpe_encode: %s\n", e.what());
    return 2;
  }
}
