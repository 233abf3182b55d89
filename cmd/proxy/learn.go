package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// This file says what the server learns from the onions of a column, for
// `proxy status` and `proxy columns plan`.

// onionRank orders onions as the design lists them.
func onionRank(kind string) int {
	if i := slices.Index([]string{string(onion.KindEq), string(onion.KindOrd), string(onion.KindAdd), string(onion.KindSearch)}, kind); i >= 0 {
		return i
	}
	return 4
}

// learnsWord says in one word what the server learns from a column's
// onion at layer.
func learnsWord(layer onion.Layer) string {
	switch layer {
	case onion.LayerDET:
		return "equality"
	case onion.LayerOPE:
		return "order"
	case onion.LayerSearch:
		return "words and trigrams"
	}
	return "nothing"
}

// learns says what the server learns from an onion at layer, with the
// join group the keys are shared with.
func learns(layer onion.Layer, joinGroup string) string {
	s := learnsWord(layer) + ": " + leakage[string(layer)]
	if joinGroup != "" && (layer == onion.LayerDET || layer == onion.LayerOPE) {
		s += ", across the columns of join group " + joinGroup
	}
	return s
}

// onionsInOrder returns a column's onions in the order of the design.
func onionsInOrder(c *catalog.Column) []string {
	var out []string
	for o := range c.Onions {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := onionRank(a) - onionRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// onionNote qualifies what the server learns from an onion of an
// encrypted column: a sensitive column is never peeled, and the DET and
// OPE layers of a join group's columns compare across the group.
func onionNote(c *catalog.Column, layer string) string {
	switch {
	case c.Policy == catalog.Sensitive:
		return " (sensitive: never peeled)"
	case c.JoinGroup != "" && (layer == string(onion.LayerDET) || layer == string(onion.LayerOPE)):
		return ", across the columns of join group " + c.JoinGroup
	}
	return ""
}

// printLearned writes, for each encrypted column, its onions' layers and
// what the server can learn from them in a word: "eq=det (equality)
// ord=rnd (nothing)".
func printLearned(out io.Writer, tables []*catalog.Table) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	n := 0
	for _, t := range tables {
		for i := range t.Columns {
			c := &t.Columns[i]
			if c.Policy == catalog.Plain {
				continue
			}
			if n == 0 {
				fmt.Fprintln(w, "\nWhat the server can learn, per encrypted column:")
			}
			n++
			var cells []string
			for _, o := range onionsInOrder(c) {
				cells = append(cells, fmt.Sprintf("%s=%s (%s)", o, c.Onions[o], learnsWord(onion.Layer(c.Onions[o]))))
			}
			switch {
			case c.Policy == catalog.Sensitive:
				cells = append(cells, "sensitive: never peeled")
			case c.JoinGroup != "":
				cells = append(cells, "join group "+c.JoinGroup)
			}
			fmt.Fprintf(w, "%s.%s.%s\t%s\n", t.Schema, t.Name, c.Name, strings.Join(cells, "  "))
		}
	}
	if n > 0 {
		fmt.Fprintln(w, "\nOnions are peeled when a query needs them; proxy columns plan --workload FILE shows what a workload would peel, without running it.")
	}
	return w.Flush()
}
