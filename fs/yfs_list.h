/* yfs_list.h — the one intrusive doubly-linked list of fs/: the LRU and
 * age orders of the segment cache, the dictionary cache and the stores of
 * loaded and framed pages. An element embeds a yfs_link and is found from
 * it with YFS_CONTAINER; a list is its oldest (head) and newest (tail) ends.
 * Linking and unlinking are O(1) and allocate nothing. Not thread-safe: the
 * owner's lock guards the list and its links.
 */
#ifndef YFS_LIST_H
#define YFS_LIST_H

#include <assert.h>
#include <stddef.h>

typedef struct yfs_link {
    struct yfs_link *prev, *next;
} yfs_link;

typedef struct yfs_list {
    yfs_link *head, *tail; /* oldest, newest; both NULL when empty */
} yfs_list;

/* The element of type `type` whose member `member` is the link ptr. */
#define YFS_CONTAINER(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* Append e (in no list) as the newest. */
static inline void yfs_list_push(yfs_list *l, yfs_link *e)
{
    assert(!e->prev && !e->next && l->head != e);
    e->prev = l->tail;
    e->next = NULL;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

/* Take e (in l) out of l. */
static inline void yfs_list_remove(yfs_list *l, yfs_link *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

#endif
