// SQLite's settings for the whole process, and the flags of trainctl's own connections.
//
// SQLite counts every allocation it makes in process-wide statistics under a global mutex
// (SQLITE_CONFIG_MEMSTATUS, on unless the library was built otherwise; Debian's is). trainctl
// reads none of them, so its first such connection turns them off. A connection that one
// thread at a time uses (the store's, the archive's: their classes say so) is opened without a
// mutex of its own (SQLITE_OPEN_NOMUTEX, SQLite's "multi-thread" mode), which every call into it
// would otherwise take.
#pragma once

namespace trainctl::storage {

// `flags` plus those of a connection used by one thread at a time. The first call also turns
// SQLite's statistics off, before SQLite initializes (a process that used SQLite before keeps
// them, which is harmless).
int SingleThreadOpenFlags(int flags);

}  // namespace trainctl::storage
