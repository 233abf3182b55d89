package main

// queryNotes says, for each query the proxy does not answer today, which
// capability it is missing, written from the refusals of a run at SF 0.01
// (the report shows the refusal itself next to it). Queries that match
// need no note.
var queryNotes = map[int]string{
	15: "a grouped CTE (revenue per l_suppkey, an expression sum) used by a join and compared with MAX of itself: needs split execution of the CTE as a relation the outer statement joins",
}
