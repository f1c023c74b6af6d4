"""The course's maintainer tools, each run from the repository's root as ``python -m tools.NAME`` (the Makefile's
targets do): ``execute_notebooks`` (`make notebooks`), ``changed_notebooks`` (`make nb`), ``assignments``
(`make assignments`, which writes ``grading_helpers``' functions into the graded tests; the masters import them),
``sync`` (`make sync`), ``grade`` with ``grading_scan``, ``grading_sandbox``, ``grading_cgroup``,
``grading_verifier`` and ``grading_wire`` (`make grade`), ``environments`` (`make lock`), ``validate``
(`make validate`), ``twins`` (the pre-commit hook, `make hooks`) and ``record_measurements`` (the recorded MPI runs
in course_lib/data/mpi). ``grading_runner.py`` is the one file run by its path: the sandbox starts it, the worker,
with the standard library, IPython and the two files it imports beside it (``grading_wire``, ``grading_helpers``).
The tools read and write the repository, so they are not part of the installed course_lib.
"""
