// Short files proven by their bytes (src/fingerprint/short_file_proof.h), read from real
// files in a temporary directory: files whose data agree become a whole-file group, and the
// hashes read are the XXH3-64 of their data.
#include "src/fingerprint/short_file_proof.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <vector>

#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::RealFiles;

// 3000 bytes of `fill`.
std::vector<uint8_t> short_data(uint8_t fill) { return std::vector<uint8_t>(3000, fill); }

class ShortFileProofTest : public ::testing::Test {
 protected:
  ShortFileProofTest() { fp_.files = FileSumsTable(4); }

  // A one-sector file holding `bytes`, its sum known (equal for every file: the candidates'
  // 32-bit sums agree, which proves nothing).
  uint32_t add(const std::string& name, const std::vector<uint8_t>& bytes) {
    const uint32_t f = files_.add_file(name, bytes);
    files_.add_extent(f, 0, bytes.size());
    fp_.files.add(1);
    std::fill_n(fp_.files.sums(f).begin(), 4, uint8_t{0x42});
    fp_.files.known(f)[0] = 1;
    return f;
  }

  ShortFileProof prove(const std::vector<uint32_t>& candidates, unsigned threads) {
    sort_by_physical_identity(files_.scan.extents);
    matches_.short_sum_candidates = {{candidates, ByteRange{0, 3000}}};
    return prove_short_files(files_.scan, fp_, matches_, threads);
  }

  RealFiles files_;
  FingerprintResult fp_;
  MatchResult matches_;
};

TEST_F(ShortFileProofTest, FilesWhoseBytesAgreeBecomeAGroup) {
  const uint32_t a = add("a", short_data(1)), b = add("b", short_data(2)),
                 c = add("c", short_data(1)), d = add("d", short_data(2)),
                 e = add("e", short_data(3));
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(threads) + " readers");
    matches_ = MatchResult{};
    const ShortFileProof proof = prove({a, b, c, d, e}, threads);
    EXPECT_EQ(proof.counts.files_read, 5u);
    EXPECT_EQ(proof.counts.bytes_read, 5u * 3000);
    EXPECT_EQ(proof.counts.files_unreadable, 0u);
    EXPECT_TRUE(matches_.short_sum_candidates.empty());
    std::vector<std::pair<uint32_t, uint64_t>> hashes = proof.hashes_read;
    std::sort(hashes.begin(), hashes.end());
    const auto hash_of = [](uint8_t fill) {
      const auto data = short_data(fill);
      return XXH3_64bits(data.data(), data.size());
    };
    EXPECT_EQ(hashes, (std::vector<std::pair<uint32_t, uint64_t>>{
                          {a, hash_of(1)}, {b, hash_of(2)}, {c, hash_of(1)}, {d, hash_of(2)},
                          {e, hash_of(3)}}));
    std::vector<std::vector<uint32_t>> groups;
    for (const auto& g : matches_.groups) {
      EXPECT_TRUE(g.whole_file);
      EXPECT_EQ(g.length, 3000u);
      std::vector<uint32_t> members;
      for (const auto& m : g.members) members.push_back(m.file);
      groups.push_back(members);
    }
    std::sort(groups.begin(), groups.end());
    EXPECT_EQ(groups, (std::vector<std::vector<uint32_t>>{{a, c}, {b, d}}));
  }
}

// A file written since the scan is not read on stale sums: left out, the others proven.
TEST_F(ShortFileProofTest, AFileChangedSinceTheScanIsLeftOut) {
  const uint32_t a = add("a", short_data(1)), b = add("b", short_data(1)),
                 c = add("c", short_data(1));
  files_.write("c", std::vector<uint8_t>(2000, 1));
  const ShortFileProof proof = prove({a, b, c}, 1);
  EXPECT_EQ(proof.counts.files_read, 2u);
  EXPECT_EQ(proof.counts.files_unreadable, 1u);
  ASSERT_EQ(matches_.groups.size(), 1u);
  ASSERT_EQ(matches_.groups[0].members.size(), 2u);
  EXPECT_EQ(matches_.groups[0].members[0].file, a);
  EXPECT_EQ(matches_.groups[0].members[1].file, b);
}

}  // namespace
}  // namespace btrdedupe
