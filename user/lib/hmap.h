/* hmap.h - a small open-addressing hash map from byte-string keys to pointers.
 *
 * Keys are copied on insert and compared with memcmp, so a struct key must have
 * its padding zeroed. */
#ifndef PYPERF_HMAP_H
#define PYPERF_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
	uint64_t hash;
	void *key;          /* NULL: empty slot */
	size_t klen;
	void *val;
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap, len;
};

uint64_t hmap_hash(const void *key, size_t klen);
void *hmap_get(const struct hmap *m, const void *key, size_t klen);
/* Insert or replace; returns 0, or -1 when out of memory. */
int hmap_put(struct hmap *m, const void *key, size_t klen, void *val);
/* Remove key; returns its value (NULL if absent).  Not while iterating. */
void *hmap_del(struct hmap *m, const void *key, size_t klen);
/* Remove every entry whose value take(val, ctx) takes (returns true for:
 * the value is the caller's then); how many. */
size_t hmap_take_if(struct hmap *m, bool (*take)(void *val, void *ctx), void *ctx);
/* Free the table and its key copies; free_val (may be NULL) is called on each value. */
void hmap_free(struct hmap *m, void (*free_val)(void *));

#define hmap_for_each(m, s) \
	for (struct hmap_slot *s = (m)->slots; s && s < (m)->slots + (m)->cap; s++) \
		if (s->key)

#endif
