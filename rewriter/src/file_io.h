// SPDX-License-Identifier: Apache-2.0
// Writing files without ever losing one (what clang-apply-replacements and editors guarantee):
// a file is only replaced by contents that were written completely and flushed to disk, and any
// error leaves the original as it was.
//
// replace_file writes a temporary file created exclusively (mkstemp: O_CREAT | O_EXCL, a random
// name, in the same folder, so no pre-existing file or symlink is ever followed), gives it the
// original's mode, owner and group, fsyncs it and renames it over the original (atomic: readers
// see the old or the new file, never a mix). A file with several hard links, or whose owner the
// tool cannot give to a new file, is instead rewritten in place, like editors do (vim's
// backupcopy, Emacs' backup-by-copying-when-linked), so that every link sees the new contents and
// the inode keeps its owner: the original contents are first saved to an exclusive backup file,
// the space for the new contents is reserved (fallocate), the file is overwritten and truncated
// and fsynced; on an error the original contents are written back, and the backup is kept (and
// named in the error) only if that fails too. Read-only files (no write permission bit) are
// refused, as is a file that changed on disk since it was read.
#pragma once

#include <string>

namespace spmd::migrate {

// Replaces the contents of the existing regular file `path`, which held `before` when it was read,
// with `after`. Returns "" on success, else the error (the file is then unchanged).
std::string replace_file(const std::string& path, const std::string& before,
                         const std::string& after);

// Writes `content` to `path` (created with mode 0666 minus the umask, or replaced as above when it
// exists). Returns "" on success, else the error.
std::string write_file(const std::string& path, const std::string& content);

}  // namespace spmd::migrate
