// Small RAII helpers over the SQLite C API, private to cache/.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "flashtune/status.h"

namespace flashtune::detail {

// The error SQLite reports on `db`, naming the database file: a message without the file is
// no help to someone with several databases.
inline Status SqliteError(sqlite3* db, const std::string& what) {
  int rc = sqlite3_extended_errcode(db);
  Code code = (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT ? Code::kCorrupt
                                                                            : Code::kDatabaseError;
  const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
  const std::string where = file && *file ? "database '" + std::string(file) + "': " : std::string();
  return Status(code, where + what + ": " + sqlite3_errmsg(db) + " (sqlite " + sqlite3_errstr(rc) + ")");
}

// The start of a statement, for error messages (a whole statement can be 600 characters).
inline std::string SqlHead(const char* sql) {
  std::string s = sql ? sql : "";
  for (char& c : s)
    if (c == '\n') c = ' ';
  const size_t start = s.find_first_not_of(' ');
  s = start == std::string::npos ? std::string() : s.substr(start);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc_ != SQLITE_OK) error_ = SqliteError(db, "prepare '" + SqlHead(sql) + "'");
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  const Status& prepare_status() const { return error_; }
  Stmt& Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); return *this; }
  Stmt& Bind(int i, int v) { sqlite3_bind_int64(stmt_, i, v); return *this; }
  Stmt& Bind(int i, bool v) { sqlite3_bind_int64(stmt_, i, v ? 1 : 0); return *this; }
  Stmt& Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); return *this; }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string(v)); }
  Stmt& BindBlob(int i, const std::vector<char>& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }

  // true: a row is ready; false: done. Errors in *status.
  bool Step(Status* status) {
    if (!error_.ok()) {
      *status = error_;
      return false;
    }
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) *status = SqliteError(db_, "step '" + SqlHead(sqlite3_sql(stmt_)) + "'");
    return false;
  }
  Status Run() {
    Status s;
    while (Step(&s)) {}
    return s;
  }

  int64_t Int(int c) const { return sqlite3_column_int64(stmt_, c); }
  double Double(int c) const { return sqlite3_column_double(stmt_, c); }
  bool IsNull(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::string Text(int c) const {
    const unsigned char* t = sqlite3_column_text(stmt_, c);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, c)) : std::string();
  }
  std::vector<char> Blob(int c) const {
    const char* b = static_cast<const char*>(sqlite3_column_blob(stmt_, c));
    return b ? std::vector<char>(b, b + sqlite3_column_bytes(stmt_, c)) : std::vector<char>();
  }
  int Columns() const { return sqlite3_column_count(stmt_); }
  std::string ColumnName(int c) const { return sqlite3_column_name(stmt_, c); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  Status error_;
};

// A toolchain row read as columns nvrtc_version, generator_version, template_hash from `first`
// on, for messages: "nvrtc V / generator V / templates <first 12 hex>".
inline std::string ToolchainText(const Stmt& q, int first) {
  return "nvrtc " + q.Text(first) + " / generator " + q.Text(first + 1) + " / templates " +
         q.Text(first + 2).substr(0, 12);
}

inline Status Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    Status s = SqliteError(db, "exec '" + SqlHead(sql.c_str()) + "'");
    sqlite3_free(err);
    return s;
  }
  return Status::Ok();
}

// BEGIN IMMEDIATE ... COMMIT, rolled back unless Commit() ran. IMMEDIATE takes the write lock up
// front so two writers wait on busy_timeout instead of deadlocking on a lock upgrade.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { status_ = Exec(db, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (status_.ok() && !done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  const Status& status() const { return status_; }
  Status Commit() {
    done_ = true;
    return Exec(db_, "COMMIT");
  }

 private:
  sqlite3* db_;
  Status status_;
  bool done_ = false;
};

}  // namespace flashtune::detail
