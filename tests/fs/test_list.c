/* The intrusive list (yfs_list.h): order of pushes, removal from the head,
 * the middle and the tail, and the element found back from its link. */
#include <criterion/criterion.h>

#include "yfs_list.h"

typedef struct item {
    int value;
    yfs_link link;
} item;

/* The values from oldest to newest, and newest to oldest, must be want[n]. */
static void expect(const yfs_list *l, const int *want, int n)
{
    int k = 0;
    for (const yfs_link *at = l->head; at; at = at->next, k++) {
        cr_assert_lt(k, n);
        cr_assert_eq(YFS_CONTAINER(at, item, link)->value, want[k]);
    }
    cr_assert_eq(k, n);
    for (const yfs_link *at = l->tail; at; at = at->prev)
        cr_assert_eq(YFS_CONTAINER(at, item, link)->value, want[--k]);
    cr_assert_eq(k, 0);
    cr_assert_eq(l->head == NULL, n == 0);
    cr_assert_eq(l->tail == NULL, n == 0);
}

Test(list, push_and_remove_anywhere)
{
    item it[5] = { { 0, { 0 } }, { 1, { 0 } }, { 2, { 0 } }, { 3, { 0 } }, { 4, { 0 } } };
    yfs_list l = { 0 };
    expect(&l, NULL, 0);
    for (int i = 0; i < 5; i++)
        yfs_list_push(&l, &it[i].link);
    expect(&l, (int[]){ 0, 1, 2, 3, 4 }, 5);
    yfs_list_remove(&l, &it[2].link); /* middle */
    expect(&l, (int[]){ 0, 1, 3, 4 }, 4);
    cr_assert_null(it[2].link.prev);
    cr_assert_null(it[2].link.next);
    yfs_list_remove(&l, &it[0].link); /* head */
    yfs_list_remove(&l, &it[4].link); /* tail */
    expect(&l, (int[]){ 1, 3 }, 2);
    yfs_list_push(&l, &it[2].link); /* a removed element goes back, as the newest */
    expect(&l, (int[]){ 1, 3, 2 }, 3);
    yfs_list_remove(&l, &it[1].link);
    yfs_list_remove(&l, &it[3].link);
    yfs_list_remove(&l, &it[2].link);
    expect(&l, NULL, 0);
}
