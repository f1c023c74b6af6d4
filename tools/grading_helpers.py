"""The helpers that the graded labs' tests call, written once: `make assignments` (tools/assignments.py) copies the
source of each function that a test of a master calls into the top of that test, so every test in an autograder zip
stands alone and a submission cannot redefine what it relies on. A master runs its own tests with these same
functions, imported in its cell that starts with `# IGNORE` (otter leaves that cell out of the student version and
the autograder).

Each function is copied alone into a test, so it imports what it uses in its own body.

>>> number(2.5), number(7), number("2.5"), number(True), number(None)
(2.5, 7, None, None, None)
>>> raises_value_error(int, "seven"), raises_value_error(int, "7")
(True, False)
>>> def answer(ranks):
...     return float(ranks)
>>> calling(answer, 8, forbidden={"ring_allreduce_time"}, files=("course_lib/collectives.py",))
(8.0, set())
"""


def number(value):
    """``value`` if it is exactly a float or an int (a numpy scalar becomes its Python value), else None: never an
    object that claims to equal anything, never a bool.

    >>> import numpy
    >>> number(numpy.float32(0.5)), number(numpy.int64(3)), number(numpy.array([1.0]))
    (0.5, 3, None)
    """
    import numpy

    if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
        value = value.item()
    return value if type(value) in (float, int) else None


def calling(function, *args, forbidden, files, **kwargs):
    """``(function(*args, **kwargs), called)``: ``called`` holds the names in ``forbidden`` of the functions defined
    in one of ``files`` (a tuple of path endings, e.g. ``("course_lib/collectives.py",)``) that ``function`` called,
    under whatever name it reached them; a call made from inside course_lib (one reference function using another)
    does not count. When the grader runs a test, ``function`` is its proxy of the answer (tools/grading_verifier.py),
    and the worker in the sandbox, where the answer runs, watches the calls the same way.

    >>> from course_lib import collectives
    >>> def answer(ranks):
    ...     return collectives.ring_allreduce_time(ranks, 1e9, 50e9, 5e-6)
    >>> calling(answer, 8, forbidden={"ring_allreduce_time"}, files=("course_lib/collectives.py",))[1]
    {'ring_allreduce_time'}
    """
    import sys

    watched_remotely = getattr(function, "call_watched", None)
    if watched_remotely is not None:
        return watched_remotely(args, kwargs, forbidden, files)
    called = set()

    def watch(frame, event, _arg):
        code = frame.f_code
        if event == "call" and code.co_name in forbidden:
            if code.co_filename.replace("\\", "/").endswith(files):
                caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                if "course_lib/" not in caller:
                    called.add(code.co_name)

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        return function(*args, **kwargs), called
    finally:
        sys.setprofile(previous)


def raises_value_error(function, *args):
    """Whether ``function(*args)`` raises ValueError (any other exception propagates)."""
    try:
        function(*args)
    except ValueError:
        return True
    return False
