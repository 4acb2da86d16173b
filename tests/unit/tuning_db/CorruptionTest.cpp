#include "TestSupport.h"

#include "tuning_db/Database.h"
#include "tuning_db/Schema.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;
namespace fs = std::filesystem;

// A healthy database with a few rows, closed (so its WAL is checkpointed).
void makePopulated(const std::string &path) {
  Database db = openOrDie(path);
  auto problem = db.putProblem("sig");
  ASSERT_TRUE(problem.ok());
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(db.putKernel(makeKernel(*problem, "k" + std::to_string(i), "sm_80", "mma")).ok());
}

void overwrite(const std::string &path, std::streamoff offset, size_t bytes) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file);
  file.seekp(offset);
  std::string garbage(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i)
    garbage[i] = char((i * 131 + 17) & 0xff);
  file.write(garbage.data(), std::streamsize(garbage.size()));
}

void writeFile(const std::string &path, const std::string &contents) {
  std::ofstream file(path, std::ios::binary);
  file << contents;
}

// Opens read-write and expects the file to have been set aside and replaced.
void expectSetAside(const TempDir &dir, const std::string &name, const std::string &reasonPart) {
  std::string path = dir.file(name);
  auto db = Database::open(path);
  ASSERT_TRUE(db.ok()) << db.error();
  ASSERT_EQ(db->notes().size(), 1u);
  const std::string &note = db->notes()[0];
  EXPECT_NE(note.find("is not usable"), std::string::npos) << note;
  EXPECT_NE(note.find(reasonPart), std::string::npos) << note;
  EXPECT_NE(note.find(".corrupt-"), std::string::npos) << note;
  auto moved = filesStartingWith(dir.path(), name + ".corrupt-");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_NE(note.find(moved[0]), std::string::npos);
  // The replacement is a healthy, empty, writable lowbit database.
  EXPECT_FALSE(db->readOnly());
  auto problems = db->problems();
  ASSERT_TRUE(problems.ok());
  EXPECT_TRUE(problems->empty());
  EXPECT_TRUE(db->putProblem("fresh").ok());
}

TEST(Corruption, GarbageInsideADatabaseIsSetAside) {
  TempDir dir;
  std::string path = dir.file("k.db");
  makePopulated(path);
  ASSERT_GT(fs::file_size(path), 4u * 4096u);
  overwrite(path, 4096, 3 * 4096); // b-tree pages after the first

  // Read-only: refused, left in place.
  OpenOptions readOnly;
  readOnly.mode = OpenMode::ReadOnly;
  auto refused = Database::open(path, readOnly);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("refusing"), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("left in place"), std::string::npos);
  EXPECT_TRUE(filesStartingWith(dir.path(), "k.db.corrupt-").empty());

  expectSetAside(dir, "k.db", "");
}

TEST(Corruption, ANonSqliteFileIsSetAside) {
  TempDir dir;
  writeFile(dir.file("text.db"), "this is a text file, not a database\n");
  expectSetAside(dir, "text.db", "not an SQLite database");
}

TEST(Corruption, WrongApplicationIdIsSetAside) {
  TempDir dir;
  std::string path = dir.file("other.db");
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_TRUE(sql::exec(raw, "PRAGMA application_id = 1234; CREATE TABLE t(x)").ok());
  sqlite3_close(raw);
  expectSetAside(dir, "other.db", "application_id 0x4d2");
}

TEST(Corruption, AnotherApplicationsDatabaseWithoutIdIsSetAside) {
  TempDir dir;
  std::string path = dir.file("foreign.db");
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_TRUE(sql::exec(raw, "CREATE TABLE notes(x); INSERT INTO notes VALUES (1)").ok());
  sqlite3_close(raw);
  expectSetAside(dir, "foreign.db", "another application");
}

TEST(Corruption, SetAsideCanFailInsteadOfRecreating) {
  TempDir dir;
  std::string path = dir.file("bad.db");
  writeFile(path, std::string(8192, 'x'));
  OpenOptions options;
  options.recreateAfterSetAside = false;
  auto db = Database::open(path, options);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("moved to"), std::string::npos) << db.error();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(filesStartingWith(dir.path(), "bad.db.corrupt-").size(), 1u);
}

TEST(Corruption, EmptyFileBecomesANewDatabase) {
  TempDir dir;
  std::string path = dir.file("empty.db");
  writeFile(path, "");
  Database db = openOrDie(path);
  EXPECT_TRUE(db.notes().empty());
  EXPECT_EQ(db.fileSchemaVersion(), kSchemaVersion);
}

TEST(Corruption, ReadOnlyRefusesNonSqliteAndForeignFiles) {
  TempDir dir;
  OpenOptions readOnly;
  readOnly.mode = OpenMode::ReadOnly;
  writeFile(dir.file("a.db"), "garbage garbage garbage");
  auto a = Database::open(dir.file("a.db"), readOnly);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("not an SQLite database"), std::string::npos);
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("b.db").c_str(), &raw), SQLITE_OK);
  ASSERT_TRUE(sql::exec(raw, "PRAGMA application_id = 7; CREATE TABLE t(x)").ok());
  sqlite3_close(raw);
  auto b = Database::open(dir.file("b.db"), readOnly);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("application_id"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir.file("a.db")));
  EXPECT_TRUE(fs::exists(dir.file("b.db")));
}

} // namespace
} // namespace lowbit::db
