// SPDX-License-Identifier: Apache-2.0
// An LD_PRELOAD shim for files_test.sh that simulates a full (or failing) disk for chosen files:
// write(), pwrite(), fsync() and fallocate() on a descriptor whose path contains $SPMD_FAIL_PATH
// fail with ENOSPC (or EIO when SPMD_FAIL_ERRNO=EIO).
//   SPMD_FAIL_AFTER=n   the first n bytes written to matching files go through (default 0)
//   SPMD_FAIL_COUNT=k   only the first k failing calls fail, later ones go through (default: all)
//   SPMD_FAIL_FSYNC=1   fsync() of a matching file fails (writes go through unless limited)
// Other descriptors (standard output, the compiler's files) are never touched.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long budget = -2;    // bytes matching writes may still write; -1: unlimited
static long failures = -2;  // failing calls left; -1: unlimited

static long env_long(const char* name, long fallback) {
  const char* value = getenv(name);
  return value == NULL || *value == '\0' ? fallback : strtol(value, NULL, 10);
}

static int matches(int fd) {
  const char* pattern = getenv("SPMD_FAIL_PATH");
  if (pattern == NULL || *pattern == '\0') return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  return strstr(path, pattern) != NULL;
}

// Fails the call (returns 1, errno set) when no failure budget is left to spare it.
static int fail_now(void) {
  if (failures == -2) failures = env_long("SPMD_FAIL_COUNT", -1);
  if (failures == 0) return 0;
  if (failures > 0) --failures;
  const char* name = getenv("SPMD_FAIL_ERRNO");
  errno = name != NULL && strcmp(name, "EIO") == 0 ? EIO : ENOSPC;
  return 1;
}

// How many of `count` bytes a matching write may write now; 0 means it fails.
static size_t allowed(size_t count) {
  if (budget == -2) budget = env_long("SPMD_FAIL_AFTER", 0);
  if (getenv("SPMD_FAIL_FSYNC") != NULL && budget == 0) return count;  // only fsync fails
  if (budget == 0) return 0;
  size_t n = count < (size_t)budget ? count : (size_t)budget;
  budget -= (long)n;
  return n;
}

ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (real == NULL) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (count > 0 && matches(fd)) {
    size_t n = allowed(count);
    if (n == 0 && fail_now()) return -1;
    if (n > 0) count = n;
  }
  return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (real == NULL) real = (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  if (count > 0 && matches(fd)) {
    size_t n = allowed(count);
    if (n == 0 && fail_now()) return -1;
    if (n > 0) count = n;
  }
  return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  return pwrite(fd, buf, count, offset);
}

int fsync(int fd) {
  static int (*real)(int);
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  if (getenv("SPMD_FAIL_FSYNC") != NULL && matches(fd) && fail_now()) return -1;
  return real(fd);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
  static int (*real)(int, int, off_t, off_t);
  if (real == NULL) real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate");
  if (getenv("SPMD_FAIL_FALLOCATE") != NULL && matches(fd) && fail_now()) return -1;
  return real(fd, mode, offset, len);
}
