package infer

import (
	"fmt"

	"github.com/layermap/layermap/mapping"
)

// Confidence bands of a pair, as every line, pair and report shows them.
const (
	// BandSure: the structures agree on the pair and nothing speaks
	// against it. On layermap's benchmark no wrong pair is sure.
	BandSure = mapping.BandSure
	// BandCheck: a plausible pair with a doubt (a small margin over the
	// runner-up, a low score, a fused module standing in for several,
	// printed sizes that differ); look at it before trusting its rows.
	BandCheck = mapping.BandCheck
	// BandUnsure: a pair nothing but a prior or a name supports, or one
	// the evidence contradicts (msprobe pairs a placeholder with a real
	// module by name, dumped shapes that cannot match).
	BandUnsure = mapping.BandUnsure
)

// bandRank orders bands from sure to unsure.
func bandRank(b string) int {
	switch b {
	case BandSure:
		return 0
	case BandCheck:
		return 1
	}
	return 2
}

// worse is the less sure of two bands.
func worse(a, b string) string {
	if bandRank(b) > bandRank(a) {
		return b
	}
	return a
}

// doubt is one reason a pair is not sure, with the band it calls for.
type doubt struct {
	band, why string
}

// assignBands gives every aligned pair its band and the doubts behind it.
func (r *alignment) assignBands() {
	for _, m := range r.pairs {
		if m.rootish {
			m.band = BandSure
			continue
		}
		var ds []doubt
		if m.score < admit {
			ds = append(ds, doubt{BandUnsure, "the template alone pairs them"})
		}
		// what both dumps confirm needs no structural certainty
		if m.score < lowScore && !m.confirmed {
			ds = append(ds, doubt{BandCheck, fmt.Sprintf("low score %.2f", round(m.score))})
		}
		if m.margin < lowMargin && !m.confirmed {
			ds = append(ds, doubt{BandCheck, fmt.Sprintf("small margin %.2f over the runner-up", round(m.margin))})
		}
		switch {
		case m.grouped:
			ds = append(ds, doubt{BandCheck, "N:1 grouped, msprobe dumps no list"})
		case m.structural[npuSide] != "":
			ds = append(ds, doubt{BandCheck, "N:1 stand-in, outputs differ"})
		}
		if m.sizeA != nil {
			ds = append(ds, doubt{BandCheck, "printed sizes differ"})
		}
		ds = append(ds, m.evidence...)
		m.band, m.doubts = BandSure, nil
		for _, d := range ds {
			m.band = worse(m.band, d.band)
			m.doubts = append(m.doubts, d.why)
		}
	}
}

// Calibration is how the confidence bands fared on layermap's labelled
// benchmark: how many of each band's pairs were right.
type Calibration struct {
	// ModelPairs and Drafts count the benchmark's model pairs and the
	// drafts scored (two directions per pair).
	ModelPairs int `json:"model_pairs"`
	Drafts     int `json:"drafts"`
	// Bands are the outcomes per band, sure first.
	Bands []BandOutcome `json:"bands"`
}

// BandOutcome counts the module pairs msprobe's resolver made with the
// benchmark's drafts in one band: right, paired with a module that is not
// the partner, paired though the module has no partner, or paired with an
// acceptable stand-in for an N:1 partner (fused, absorbed, experts).
type BandOutcome struct {
	Band                              string `json:"band"`
	Correct, Wrong, Spurious, StandIn int    `json:"-"`
	// Precision is Correct over Correct+Wrong+Spurious, -1 with none.
	Precision float64 `json:"precision"`
	Pairs     int     `json:"pairs"`
}

// BenchmarkCalibration returns the bands' measured precision.
func BenchmarkCalibration() Calibration {
	c := calibration
	c.Bands = append([]BandOutcome(nil), c.Bands...)
	for i := range c.Bands {
		b := &c.Bands[i]
		b.Pairs = b.Correct + b.Wrong + b.Spurious
		b.Precision = -1
		if b.Pairs > 0 {
			b.Precision = float64(b.Correct) / float64(b.Pairs)
		}
	}
	return c
}
