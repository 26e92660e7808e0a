package printparse

import (
	"slices"
	"strconv"
	"strings"
)

// IndexRange renders the list indices of repeat members, as printed paths
// collapse them: "3" for one, "{0-27}" for a run, "{0,2,5-7}" otherwise.
// Duplicates count once; the order given does not matter.
func IndexRange(ids []int) string {
	nums := slices.Clone(ids)
	slices.Sort(nums)
	nums = slices.Compact(nums)
	if len(nums) == 1 {
		return strconv.Itoa(nums[0])
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(nums[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(nums[j]))
		}
		i = j + 1
	}
	b.WriteByte('}')
	return b.String()
}
