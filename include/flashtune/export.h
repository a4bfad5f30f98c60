/* flashtune/export.h — which declarations libflashtune.so exports.
 *
 * The library is built with -fvisibility=hidden and -fvisibility-inlines-hidden, so only what
 * is marked here is part of the shared library's ABI; the layers' internals (compiler, driver,
 * kernel, cubin store) stay private and may change without breaking users.
 * FLASHTUNE_API_BEGIN / FLASHTUNE_API_END bracket a whole public header (the installed ones,
 * CMakeLists.txt's FLASHTUNE_PUBLIC_HEADERS): every declaration between them is exported. One
 * bracket per header rather than a mark on each declaration keeps the API's lines readable.
 * The static library ignores visibility: everything in it links.
 *
 * Thread safety: macros only. Plain C99 (flashtune.h includes it).
 */
#ifndef FLASHTUNE_EXPORT_H_
#define FLASHTUNE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define FLASHTUNE_API_BEGIN _Pragma("GCC visibility push(default)")
#define FLASHTUNE_API_END _Pragma("GCC visibility pop")
#else
#define FLASHTUNE_API_BEGIN
#define FLASHTUNE_API_END
#endif

#endif /* FLASHTUNE_EXPORT_H_ */
