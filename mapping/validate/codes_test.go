package validate

import (
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// Codes describes every finding code there is.
func TestCodesComplete(t *testing.T) {
	var codes []string
	for _, c := range Codes {
		if c.Meaning == "" || c.Severity == "" || c.Check == "" {
			t.Errorf("incomplete %+v", c)
		}
		codes = append(codes, c.Code)
	}
	testkit.CheckCodeTable(t, ".", codes)
}
