package offheap

import "syscall"

// populate maps a table's pages when it is made: a hash table is written
// all over soon after, and a fault per page costs about as much as the
// work on it in a VM (BenchmarkNameSet of printparse/msprobe: 283 -> 146
// ms).
const populate = syscall.MAP_POPULATE
