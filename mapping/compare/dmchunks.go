package compare

import (
	"bytes"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"
)

// A data mapping yaml (-dm) is one flat mapping, a pair a row: 9 MB for
// dumps of 27 MB a side. yaml.v3 reads it at about 25 MB/s and holds two
// nodes a pair until it is done (some 100 bytes a pair besides the
// strings). dataMappingChunks cuts the file at lines that start a key of
// the top-level mapping and reads the pieces on every CPU, each as a
// document of its own by yaml.v3, so that only the pieces being read have
// nodes. A cut could change what the file means where the piece before
// it ends inside a construct (a quoted scalar, a flow collection: yaml.v3
// then refuses that piece), where the document ends before the file does
// (a document marker or a directive: such a file is never cut), or where
// the top-level mapping is a flow mapping (yaml.v3 reads it without what
// follows). Any piece yaml.v3 refuses, or that is not a block mapping of
// scalars at column 1, sends the whole file to the reading as one
// document, whose errors name their line. FuzzDataMappingChunks holds
// the two readings to the same pairs.

// dmChunk is the least size of a piece.
const dmChunk = 1 << 20

// dataMappingChunks reads the data mapping b in pieces of at least chunk
// bytes on up to workers goroutines; false: read it whole (too small to
// cut, or a piece that must not be read alone).
func dataMappingChunks(b []byte, workers, chunk int) (map[string]string, bool) {
	if len(b) < 2*chunk || hasDocumentMarks(b) {
		return nil, false
	}
	cuts := keyCuts(b, chunk)
	if len(cuts) < 2 {
		return nil, false
	}
	pieces := make([][][2]string, len(cuts))
	var next atomic.Int32
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(max(workers, 1), len(cuts)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(cuts) || failed.Load() {
					return
				}
				end := len(b)
				if i+1 < len(cuts) {
					end = cuts[i+1]
				}
				ps, ok := dataMappingPiece(b[cuts[i]:end])
				if !ok {
					failed.Store(true)
					return
				}
				pieces[i] = ps
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return nil, false
	}
	n := 0
	for _, ps := range pieces {
		n += len(ps)
	}
	m := make(map[string]string, n)
	for _, ps := range pieces {
		for _, p := range ps {
			m[p[0]] = p[1] // duplicate keys: the last wins, as with PyYAML
		}
	}
	return m, true
}

// dataMappingPiece reads one piece of a data mapping: its pairs, false
// where it is not a block mapping of scalars at column 1.
func dataMappingPiece(b []byte) ([][2]string, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) != 1 {
		return nil, false
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode || top.Style&yaml.FlowStyle != 0 || top.Column != 1 {
		return nil, false
	}
	ps := make([][2]string, 0, len(top.Content)/2)
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return nil, false
		}
		ps = append(ps, [2]string{k.Value, v.Value})
	}
	return ps, true
}

// keyCuts are where the pieces of b start: 0, then each first line at
// least chunk bytes past the last cut that starts with a letter, digit or
// underscore (a plain key at column 1).
func keyCuts(b []byte, chunk int) []int {
	cuts := []int{0}
	for at := chunk; at < len(b); {
		nl := bytes.IndexByte(b[at-1:], '\n')
		if nl < 0 {
			break
		}
		at += nl // the line start after that line break
		if at < len(b) && plainKeyStart(b[at]) {
			cuts = append(cuts, at)
			at += chunk
		} else {
			at++
		}
	}
	return cuts
}

func plainKeyStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// hasDocumentMarks tells whether a line of b starts with a document
// marker ("---", "...") or a directive ("%").
func hasDocumentMarks(b []byte) bool {
	for line := b; len(line) > 0; {
		if line[0] == '%' || bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")) {
			return true
		}
		nl := bytes.IndexByte(line, '\n')
		if nl < 0 {
			return false
		}
		line = line[nl+1:]
	}
	return false
}
