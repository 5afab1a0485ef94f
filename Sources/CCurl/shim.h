// Typed, non-variadic wrappers over libcurl for Swift, which cannot call C variadic functions.
// One wrapper per argument type curl expects; every option is passed with its exact C type.
#ifndef YX_CCURL_SHIM_H
#define YX_CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

// MARK: file system

#if defined(__linux__)
extern int syncfs(int fd);  // glibc declares these only under _GNU_SOURCE
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
#endif

/// A POSIX write lock over the whole file (from its start, to its end however it grows).
static inline struct flock yx_whole_file_write_lock(void) {
    struct flock lock = {0};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    return lock;
}

/// Takes a write lock on the whole file open as `fd`, without waiting: a POSIX record lock, held by this
/// process until it closes a descriptor of the file (or ends, `kill -9` included), seen by other
/// processes (on NFS too), never by this one. Returns 0, or -1 with errno (EAGAIN or EACCES: another
/// process holds a lock on it).
static inline int yx_lock_whole_file(int fd) {
    struct flock lock = yx_whole_file_write_lock();
    return fcntl(fd, F_SETLK, &lock);
}

/// Whether another process holds a lock on the file open as `fd` that would stop `yx_lock_whole_file`:
/// 1, or 0 when none does (this process's own locks never count), -1 with errno when it cannot be told.
/// (The holder's pid is not asked for: it reads 0 for a holder in another pid namespace or on another
/// machine.)
static inline int yx_file_is_locked_by_another(int fd) {
    struct flock lock = yx_whole_file_write_lock();
    if (fcntl(fd, F_GETLK, &lock) != 0) return -1;
    return lock.l_type == F_UNLCK ? 0 : 1;
}

/// Flushes the whole file system that holds `fd` (Linux), or just `fd` elsewhere.
static inline int yx_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}

/// Flushes the data of the file open as `fd`, and what reading it needs (its size), but no other file:
/// `fdatasync`.
static inline int yx_sync_file_data(int fd) {
#if defined(__linux__)
    return fdatasync(fd);
#else
    return fsync(fd);
#endif
}

/// Starts writing a range of `fd` to disk without waiting for it (Linux `sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`), so that a later flush has little left to do. Does nothing elsewhere.
static inline int yx_start_writeback(int fd, off_t offset, off_t length) {
#if defined(__linux__)
    return sync_file_range(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

/// Opens a new file without a name in the folder `directory` (Linux `O_TMPFILE`), read and write,
/// close-on-exec. Returns -1 with `errno` set, `EOPNOTSUPP` where there is no such thing (other systems,
/// or a file system without it: the caller then creates a named file).
static inline int yx_open_unnamed(const char *directory, unsigned int mode) {
#if defined(__linux__)
#if defined(O_TMPFILE)
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t)mode);
#else
    // glibc defines `O_TMPFILE` only under _GNU_SOURCE; `__O_TMPFILE` (with `O_DIRECTORY`) always.
    return open(directory, __O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t)mode);
#endif
#else
    (void)directory; (void)mode;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

/// Gives the unnamed file open as `fd` (``yx_open_unnamed``) the name `path`, without replacing
/// anything: fails with `EEXIST` when `path` exists. By the descriptor itself (`AT_EMPTY_PATH`), which
/// Linux allows since 6.10 to a process with the credentials the file was opened with, and to any process
/// with `CAP_DAC_READ_SEARCH`; it fails with `ENOENT` where it is not allowed.
static inline int yx_link_unnamed_by_descriptor(int fd, const char *path) {
#if defined(__linux__)
    return linkat(fd, "", AT_FDCWD, path, 0x1000 /* AT_EMPTY_PATH, which glibc declares only under _GNU_SOURCE */);
#else
    (void)fd; (void)path;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

/// The same through `/proc/self/fd`, which needs no privilege and costs a walk through `/proc`.
static inline int yx_link_unnamed_through_proc(int fd, const char *path) {
#if defined(__linux__)
    char source[40];
    snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
#else
    (void)fd; (void)path;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

// MARK: extended attributes (the resume mark of a `.part`)

#include <errno.h>
#if defined(__linux__) || defined(__APPLE__)
#include <sys/xattr.h>
#endif

// Linux: in the `user.` namespace, with a short name, so that a short value fits inside an ext4 inode
// (no block of its own).
#if defined(__linux__)
#define YX_RESUME_MARK_NAME "user.yx"
#else
#define YX_RESUME_MARK_NAME "org.yxqueue.resume"
#endif

/// Sets the resume mark of the open file `fd` (replacing one); 0, or -1 with `errno` (ENOTSUP where the
/// file system keeps no extended attributes).
static inline int yx_set_resume_mark(int fd, const void *value, size_t size) {
#if defined(__linux__)
    return fsetxattr(fd, YX_RESUME_MARK_NAME, value, size, 0);
#elif defined(__APPLE__)
    return fsetxattr(fd, YX_RESUME_MARK_NAME, value, size, 0, 0);
#else
    (void)fd; (void)value; (void)size;
    errno = ENOTSUP;
    return -1;
#endif
}

/// Reads the resume mark of `fd` into `buffer`: its length, or -1 (none, too long, or unsupported).
static inline long yx_get_resume_mark(int fd, void *buffer, size_t size) {
#if defined(__linux__)
    return (long)fgetxattr(fd, YX_RESUME_MARK_NAME, buffer, size);
#elif defined(__APPLE__)
    return (long)fgetxattr(fd, YX_RESUME_MARK_NAME, buffer, size, 0, 0);
#else
    (void)fd; (void)buffer; (void)size;
    errno = ENOTSUP;
    return -1;
#endif
}

/// Removes the resume mark of `fd`, if it has one.
static inline int yx_remove_resume_mark(int fd) {
#if defined(__linux__)
    return fremovexattr(fd, YX_RESUME_MARK_NAME);
#elif defined(__APPLE__)
    return fremovexattr(fd, YX_RESUME_MARK_NAME, 0);
#else
    (void)fd;
    return 0;
#endif
}

// MARK: threads

#include <pthread.h>
#if defined(__linux__)
extern int pthread_setname_np(pthread_t thread, const char *name);  // glibc: only under _GNU_SOURCE
#endif

/// Names the calling thread as the system shows it (Linux: at most 15 characters, longer names are
/// refused; `/proc/self/task/ID/comm`, `top -H`, debuggers).
static inline int yx_name_current_thread(const char *name) {
#if defined(__linux__)
    return pthread_setname_np(pthread_self(), name);
#elif defined(__APPLE__)
    return pthread_setname_np(name);
#else
    (void)name;
    return 0;
#endif
}

// MARK: easy handle options

static inline CURLcode yx_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode yx_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode yx_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode yx_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode yx_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
static inline CURLcode yx_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_XFERINFOFUNCTION.
static inline CURLcode yx_easy_setopt_xferinfo_callback(CURL *handle, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

/// For CURLOPT_DEBUGFUNCTION (with CURLOPT_VERBOSE: curl's own account of connections and headers).
static inline CURLcode yx_easy_setopt_debug_callback(CURL *handle, curl_debug_callback value) {
    return curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, value);
}

// MARK: easy handle information

static inline CURLcode yx_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode yx_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode yx_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode yx_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: multi handle options

static inline CURLMcode yx_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

// MARK: constants Swift does not import (function-like or composite macros)

static const long YX_CURLPAUSE_CONT = CURLPAUSE_CONT;
static const size_t YX_CURL_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
static const long YX_CURL_HTTP_VERSION_2TLS = CURL_HTTP_VERSION_2TLS;

// MARK: process-wide initialisation

/// Initialises libcurl once. OpenSSL is first initialised without its atexit handler: that handler can
/// run while curl handles are still being freed on other threads at process exit and double-free
/// (swift-corelibs-foundation hit this and fixed it the same way). Looked up with dlsym, so nothing
/// breaks when curl uses another TLS library.
static inline CURLcode yx_curl_global_init(void) {
    typedef int (*openssl_init_fn)(uint64_t, const void *);
    openssl_init_fn openssl_init = (openssl_init_fn)dlsym(RTLD_DEFAULT, "OPENSSL_init_crypto");
    if (openssl_init != NULL) {
        const uint64_t no_atexit = 0x00080000L; // OPENSSL_INIT_NO_ATEXIT
        openssl_init(no_atexit, NULL);
    }
    return curl_global_init(CURL_GLOBAL_ALL);
}

/// Builds what OpenSSL builds on first use and then keeps for the whole process: its primary random
/// generator, seeded, and the tables of algorithms that a TLS context is made from. libcurl meets both
/// at its first TLS connection, on the transfer thread, between the TCP connect and the ClientHello:
/// 8.4 million instructions there (callgrind, 2026-11-28; `RAND_status` 5.8 M, the first `SSL_CTX_new`
/// 2.6 M), each later connection 0.75 M. Called after `yx_curl_global_init`, on a thread of its own.
/// Only when curl's TLS library is OpenSSL; looked up with dlsym like the call above, so nothing breaks
/// with another one (it then does nothing).
static inline void yx_openssl_warm_up(void) {
    const curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    if (info == NULL || info->ssl_version == NULL || strncmp(info->ssl_version, "OpenSSL/", 8) != 0) return;
    typedef int (*rand_status_fn)(void);
    typedef const void *(*method_fn)(void);
    typedef void *(*ctx_new_fn)(const void *);
    typedef void (*ctx_free_fn)(void *);
    rand_status_fn rand_status = (rand_status_fn)dlsym(RTLD_DEFAULT, "RAND_status");
    method_fn client_method = (method_fn)dlsym(RTLD_DEFAULT, "TLS_client_method");
    ctx_new_fn ctx_new = (ctx_new_fn)dlsym(RTLD_DEFAULT, "SSL_CTX_new");
    ctx_free_fn ctx_free = (ctx_free_fn)dlsym(RTLD_DEFAULT, "SSL_CTX_free");
    if (rand_status != NULL) (void)rand_status();
    if (client_method != NULL && ctx_new != NULL && ctx_free != NULL) {
        void *ctx = ctx_new(client_method());
        if (ctx != NULL) ctx_free(ctx);
    }
}

#endif
