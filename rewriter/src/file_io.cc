// SPDX-License-Identifier: Apache-2.0
// Safe file replacement (file_io.h), on POSIX calls whose every error is checked.
#include "file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

namespace spmd::migrate {
namespace {

std::string error_text(const std::string& what, const std::string& path, int error) {
  return "cannot " + what + " " + path + ": " + std::strerror(error);
}

// Writes all of `data` at `offset` (or at the current position when offset < 0).
bool write_all(int fd, const std::string& data, off_t offset = -1) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = offset < 0 ? ::write(fd, data.data() + done, data.size() - done)
                           : ::pwrite(fd, data.data() + done, data.size() - done,
                                      offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, std::string& out) {
  out.clear();
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buffer, static_cast<size_t>(n));
  }
}

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A new file next to `path`, created exclusively: its descriptor and name, or the error.
struct TempFile {
  int fd = -1;
  std::string name;
};
std::optional<TempFile> make_temp(const std::string& path, const char* kind, std::string& error) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string name = folder_of(path) + "/." + base + "." + kind + "-XXXXXX";
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    error = error_text("create a temporary file in", folder_of(path), errno);
    return std::nullopt;
  }
  return TempFile{fd, name};
}

// Makes a rename in `folder` durable (best effort: some file systems refuse to fsync folders).
void sync_folder(const std::string& folder) {
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The temporary-file-and-rename path; nullopt asks for the in-place path instead (the owner
// cannot be given to a new file).
std::optional<std::string> replace_by_rename(const std::string& path, const struct stat& st,
                                             const std::string& after) {
  std::string error;
  std::optional<TempFile> temp = make_temp(path, "spmd-migrate", error);
  if (!temp) return error;
  auto fail = [&](const std::string& what) {
    int saved = errno;
    ::close(temp->fd);
    ::unlink(temp->name.c_str());
    return error_text(what, what == "write" ? path : temp->name, saved);
  };
  if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) &&
      ::fchown(temp->fd, st.st_uid, st.st_gid) != 0) {
    ::close(temp->fd);
    ::unlink(temp->name.c_str());
    return std::nullopt;
  }
  if (!write_all(temp->fd, after)) return fail("write");
  if (::fchmod(temp->fd, st.st_mode & 07777) != 0) return fail("set the mode of");
  if (::fsync(temp->fd) != 0) return fail("write");
  if (::close(temp->fd) != 0) {
    int saved = errno;
    ::unlink(temp->name.c_str());
    return error_text("write", path, saved);
  }
  if (::rename(temp->name.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp->name.c_str());
    return error_text("replace", path, saved);
  }
  sync_folder(folder_of(path));
  return std::string();
}

// The in-place path: backup, reserve, overwrite, truncate, fsync; restore on error.
std::string replace_in_place(const std::string& path, int fd, const std::string& before,
                             const std::string& after) {
  std::string error;
  std::optional<TempFile> backup = make_temp(path, "spmd-migrate-backup", error);
  if (!backup) return error;
  if (!write_all(backup->fd, before) || ::fsync(backup->fd) != 0 || ::close(backup->fd) != 0) {
    int saved = errno;
    ::unlink(backup->name.c_str());
    return error_text("write the backup of", path, saved);
  }
  // Reserve the space first: running out of it later would leave the file half written.
  if (after.size() > before.size() &&
      ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(after.size())) != 0 &&
      errno != EOPNOTSUPP && errno != ENOSYS) {
    int saved = errno;
    ::unlink(backup->name.c_str());
    return error_text("write", path, saved);
  }
  if (write_all(fd, after, 0) && ::ftruncate(fd, static_cast<off_t>(after.size())) == 0 &&
      ::fsync(fd) == 0) {
    ::unlink(backup->name.c_str());
    return "";
  }
  int saved = errno;
  std::string message = error_text("write", path, saved);
  if (write_all(fd, before, 0) && ::ftruncate(fd, static_cast<off_t>(before.size())) == 0 &&
      ::fsync(fd) == 0) {
    ::unlink(backup->name.c_str());
    return message + " (its original contents were written back)";
  }
  return message + "; writing its original contents back failed too: they are in " + backup->name;
}

}  // namespace

std::string replace_file(const std::string& path, const std::string& before,
                         const std::string& after) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return error_text("read", path, errno);
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file; it is left unchanged";
  if ((st.st_mode & 0222) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return path + " is read-only (mode " + mode +
           "); it is left unchanged: make it writable (chmod u+w) to migrate it";
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return error_text("write", path, errno) + "; it is left unchanged";
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) return error_text("read", path, errno);
  std::string now;
  if (!read_all(fd, now)) return error_text("read", path, errno);
  if (now != before) {
    return path +
           " changed on disk while spmd-migrate ran; it is left unchanged: run the tool "
           "again";
  }
  if (st.st_nlink == 1) {
    if (std::optional<std::string> result = replace_by_rename(path, st, after)) return *result;
  }
  return replace_in_place(path, fd, before, after);
}

std::string write_file(const std::string& path, const std::string& content) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    std::string before;
    bool read = fd >= 0 && read_all(fd, before);
    if (fd >= 0) ::close(fd);
    if (!read) return error_text("read", path, errno);
    return replace_file(path, before, content);
  }
  std::string error;
  std::optional<TempFile> temp = make_temp(path, "spmd-migrate", error);
  if (!temp) return "cannot write " + path + ": " + std::strerror(errno);
  mode_t mask = ::umask(0);
  ::umask(mask);
  bool ok = write_all(temp->fd, content) && ::fchmod(temp->fd, 0666 & ~mask) == 0 &&
            ::fsync(temp->fd) == 0;
  int saved = errno;
  ok = ::close(temp->fd) == 0 && ok;
  if (ok && ::rename(temp->name.c_str(), path.c_str()) == 0) {
    sync_folder(folder_of(path));
    return "";
  }
  saved = ok ? errno : saved;
  ::unlink(temp->name.c_str());
  return error_text("write", path, saved);
}

}  // namespace spmd::migrate
