package mapping

import (
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// LoadCodes describes every load code there is.
func TestLoadCodesComplete(t *testing.T) {
	var codes []string
	for _, c := range LoadCodes {
		if c.Meaning == "" || c.Severity == "" || c.Check == "" {
			t.Errorf("incomplete %+v", c)
		}
		codes = append(codes, c.Code)
	}
	testkit.CheckCodeTable(t, ".", codes)
}
