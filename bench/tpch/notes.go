package main

// queryNotes says, for each query the proxy does not answer today, which
// capability it is missing, written from the refusals of a run at SF 0.01
// (the report shows the refusal itself next to it). Queries that match
// need no note; all 22 match at present.
var queryNotes = map[int]string{}
