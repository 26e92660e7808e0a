//go:build unix && !linux

package offheap

// populate: pages are mapped as they are touched.
const populate = 0
