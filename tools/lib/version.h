/*
 * tools/lib/version.h — the version every program of gpumem prints with
 * --version, and the man pages carry. One place to change it.
 */
#ifndef GM_VERSION_H
#define GM_VERSION_H

#define GM_VERSION "0.3.0"

#endif
