/* hmap.c - open addressing with linear probing, capacity a power of two, kept
 * under 70 % full.  The hash is FNV-1a over the key bytes followed by a final
 * mix, which is plenty for the keys used here (pids, addresses, strings). */
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t hmap_hash(const void *key, size_t klen)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < klen; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static struct hmap_slot *find_slot(struct hmap_slot *slots, size_t cap, uint64_t h,
				   const void *key, size_t klen)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		struct hmap_slot *s = &slots[i];

		if (!s->key || (s->hash == h && s->klen == klen && !memcmp(s->key, key, klen)))
			return s;
	}
}

void *hmap_get(const struct hmap *m, const void *key, size_t klen)
{
	if (!m->cap)
		return NULL;
	struct hmap_slot *s = find_slot(m->slots, m->cap, hmap_hash(key, klen), key, klen);
	return s->key ? s->val : NULL;
}

static int grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct hmap_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		struct hmap_slot *old = &m->slots[i];

		if (old->key)
			*find_slot(slots, cap, old->hash, old->key, old->klen) = *old;
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

int hmap_put(struct hmap *m, const void *key, size_t klen, void *val)
{
	uint64_t h = hmap_hash(key, klen);
	struct hmap_slot *s;

	if ((m->len + 1) * 10 > m->cap * 7 && grow(m))
		return -1;
	s = find_slot(m->slots, m->cap, h, key, klen);
	if (!s->key) {
		void *copy = malloc(klen ? klen : 1);

		if (!copy)
			return -1;
		memcpy(copy, key, klen);
		s->key = copy;
		s->klen = klen;
		s->hash = h;
		m->len++;
	}
	s->val = val;
	return 0;
}

/* Deletion shifts later slots of the probe run back into the hole (no
 * tombstones): a slot moves unless its home lies cyclically in (hole, slot]. */
/* Empty occupied slot s, moving the entries of its probe run back over the
 * hole; its value. */
static void *del_slot(struct hmap *m, struct hmap_slot *s)
{
	size_t mask, hole, j;
	void *val = s->val;

	free(s->key);
	mask = m->cap - 1;
	hole = j = (size_t)(s - m->slots);
	for (;;) {
		struct hmap_slot *t;
		size_t home;

		j = (j + 1) & mask;
		t = &m->slots[j];
		if (!t->key)
			break;
		home = t->hash & mask;
		if (hole <= j ? (home <= hole || home > j) : (home <= hole && home > j)) {
			m->slots[hole] = *t;
			hole = j;
		}
	}
	memset(&m->slots[hole], 0, sizeof(m->slots[hole]));
	m->len--;
	return val;
}

void *hmap_del(struct hmap *m, const void *key, size_t klen)
{
	struct hmap_slot *s;

	if (!m->cap)
		return NULL;
	s = find_slot(m->slots, m->cap, hmap_hash(key, klen), key, klen);
	return s->key ? del_slot(m, s) : NULL;
}

size_t hmap_take_if(struct hmap *m, bool (*take)(void *val, void *ctx), void *ctx)
{
	size_t n = 0;

	/* a delete moves a later entry of the run back into slot i: looked at
	 * again; one moved from the table's start to its end is looked at
	 * twice, and take said no to it the first time */
	for (size_t i = 0; i < m->cap;) {
		struct hmap_slot *s = &m->slots[i];

		if (s->key && take(s->val, ctx)) {
			(void)del_slot(m, s);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

void hmap_free(struct hmap *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].key)
			continue;
		free(m->slots[i].key);
		if (free_val)
			free_val(m->slots[i].val);
	}
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
