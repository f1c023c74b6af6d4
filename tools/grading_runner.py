"""Grade one notebook with otter inside the sandbox: the only code of the grader that runs next to a submission.

tools/grade.py starts it (inside bubblewrap, see tools/grading_sandbox.py) as

    python tools/grading_runner.py LIMITS_JSON SUBMISSION AUTOGRADER_ZIP SUMMARY_JSON

1. it lowers its resource limits (LIMITS_JSON: {"address_space_bytes", "processes", "cpu_s", "file_bytes"}, see
   ``resource.setrlimit``); otter, its kernel and everything the notebook starts inherit them;
2. it runs ``otter run``'s grading function in this process (otter executes the notebook in a kernel, a child
   process, then runs every public and hidden test there);
3. it writes SUMMARY_JSON: per question the score, the points possible, otter's summary of the public test cases
   and whether the hidden ones passed; nothing else of otter's results (hidden tests' messages stay here), except,
   when otter could not read the tests' results at all, the type and first words of that error ("error").

The grader trusts nothing of this: the notebook's code runs as the same user and may have replaced the summary
or killed this process; tools/grade.py validates the summary from outside. Only the standard library and otter.
"""

from __future__ import annotations

import json
import resource
import sys

PUBLIC_SUMMARY_CHARS = 4000  # per question; tools/grade.py cuts the whole feedback to its own limit too


def apply_limits(limits: dict) -> None:
    """Lower this process's limits (and so its children's) to ``limits``; never raises them."""
    for name, key in (
        ("RLIMIT_AS", "address_space_bytes"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_CPU", "cpu_s"),
        ("RLIMIT_FSIZE", "file_bytes"),
    ):
        if limits.get(key) is None:
            continue
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = int(limits[key])
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def summary(results) -> dict:
    """{question: {score, possible, public, hidden_passed}} of otter's GradingResults."""
    out = {}
    for name, test_file in results.results.items():
        hidden = [case.passed for case in test_file.test_case_results if case.test_case.hidden]
        out[str(name)] = {
            "score": test_file.score,
            "possible": test_file.possible,
            "public": test_file.summary(public_only=True)[:PUBLIC_SUMMARY_CHARS],
            "hidden_passed": all(hidden) if hidden else None,
        }
    return out


def main(argv: list[str]) -> int:
    limits_json, submission, autograder, summary_path = argv
    apply_limits(json.loads(limits_json))
    import warnings

    warnings.simplefilter("ignore")
    from otter.run import main as otter_run

    results = otter_run(submission, autograder=autograder, output_dir=None, no_logo=True)
    output = {"questions": summary(results)}
    error = getattr(results, "_catastrophic_error", None)  # otter could not read the tests' results at all
    if error is not None:
        output["error"] = f"{type(error).__name__}: {str(error)[:200]}"
    with open(summary_path, "w", encoding="utf-8") as stream:
        json.dump(output, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
