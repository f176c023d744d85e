/* SPDX-License-Identifier: MIT */
/* The inode numbers the daemon handed to the kernel, kept in a memory file that outlives the
 * process (its supervisor or systemd's file-descriptor store holds it), so a successor hands
 * out the same ones (docs/design.md, "Taking over"): every snapshot's number, written before
 * the reply that first names it, and the highest number ever handed out. Content is never
 * here: a successor serves only what it verified itself (--store), under these numbers. */
#pragma once

#include <stdint.h>

struct sfs_inostate;

/* A new state in a new memory file (fd -1), or the one a predecessor left in fd (taken
 * over: judged, and refused with -EBADMSG when it does not parse or names one number
 * twice). 0 and *out, or -errno. */
int sfs_inostate_open(int fd, struct sfs_inostate **out);
/* Notes that ino names digest (32 bytes) in space (0: the main mount; a scope view's
 * numbers are a space of their own), or, digest NULL, that ino was handed out: before the
 * reply that names it. Never fails the request: a write
 * that fails is counted, and a successor then serves fewer of the old numbers. */
void sfs_inostate_note(struct sfs_inostate *st, const uint8_t *digest, uint64_t ino,
                       uint32_t space);
/* The number a predecessor gave digest in space, or 0. */
uint64_t sfs_inostate_ino(struct sfs_inostate *st, const uint8_t *digest, uint32_t space);
/* The digest a predecessor's number ino names in space into out: 0, or -ENOENT. */
int sfs_inostate_digest(struct sfs_inostate *st, uint64_t ino, uint32_t space, uint8_t out[32]);
/* One past the highest number a predecessor noted in space (0 when none). */
uint64_t sfs_inostate_space_next(struct sfs_inostate *st, uint32_t space);
/* One past the highest number ever handed out (0 when none was). */
uint64_t sfs_inostate_next(struct sfs_inostate *st);
/* Takeovers this state has seen, counted once per successor. */
uint32_t sfs_inostate_generation(struct sfs_inostate *st);
/* The memory file, for the keeper. */
int sfs_inostate_fd(const struct sfs_inostate *st);
void sfs_inostate_free(struct sfs_inostate *st);
