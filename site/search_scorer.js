// The site's search ranking (html_search_scorer in site/conf.py): Sphinx's default weights, and one rule more. A
// heading that begins with the words searched for is where that topic is taught ("ring all-reduce" finds lesson
// 02's "Ring all-reduce, step by step"), so it comes before the pages that only mention them.
var Scorer = {
  score: (result) => {
    const [, title, , , score] = result;
    const query = (new URLSearchParams(window.location.search).get("q") || "").toLowerCase().trim();
    const heading = title.split(" > ").pop().toLowerCase();
    return query && heading.startsWith(query) ? score + 100 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
