/** \file
 * baton/export.h — BATON_API, the mark of what libbaton exports. C11 and C++, so that the C
 * headers (baton/baton.h, baton/baton_vulkan.h) and the C++ headers (`baton/<name>.hpp`) share it.
 *
 * libbaton is built with hidden symbol visibility: only declarations marked BATON_API — the C
 * functions, the C++ free functions and the C++ handle classes of the public headers — are
 * exported; everything else (baton::core, the backends, interop) stays inside the library.
 * scripts/check-exports.sh checks the built and the installed library against this (see
 * docs/abi.md). Users never need to define anything: in their code the mark is harmless.
 */
#ifndef BATON_EXPORT_H_
#define BATON_EXPORT_H_

/** \def BATON_API
 * Marks a declaration that libbaton exports (see the top of this header). Default visibility on
 * GCC and Clang (ELF); nothing elsewhere. */
#if defined(__GNUC__) || defined(__clang__)
#define BATON_API __attribute__((visibility("default")))
#else
#define BATON_API
#endif

#endif /* BATON_EXPORT_H_ */
