//go:build cgo && linux

package sqlite

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static void cpid_trim(void) { malloc_trim(0); }
#else
static void cpid_trim(void) {}
#endif
*/
import "C"

// trimCHeap gives the C heap's free memory back to the system (glibc's
// malloc_trim, every arena; nothing elsewhere). SQLite's sorts (CREATE
// INDEX, DISTINCT, GROUP BY) run on its worker threads, whose arenas glibc
// keeps once freed: the indexes of a full rebuild of 10M synthetic events
// kept 75-140 MB of them to the run's end, on top of the Go heap.
func trimCHeap() { C.cpid_trim() }
