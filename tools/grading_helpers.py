"""The helpers that the graded labs' tests call, written once: `make assignments` (tools/assignments.py) copies the
source of each function that a test of a master calls into the top of that test, so every test in an autograder zip
stands alone and a submission cannot redefine what it relies on. A master runs its own tests with these same
functions, imported in its cell that starts with `# IGNORE` (otter leaves that cell out of the student version and
the autograder).

Each function is copied into a test with the helpers it calls (``calling`` brings ``disable`` and
``reference_functions``), so it imports what it uses in its own body.

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


def reference_functions(files):
    """{name: [function, ...]} of every Python function defined in a loaded module whose file ends with one of
    ``files`` (a tuple of path endings, e.g. ``("course_lib/collectives.py",)``): its functions, and its classes'
    methods and property accessors, by the name they are defined under.

    >>> from course_lib import collectives
    >>> reference_functions(("course_lib/collectives.py",))["ring_allreduce_time"] == [collectives.ring_allreduce_time]
    True
    """
    import sys
    import types

    found = {}

    def add(name, value):
        for inner in (value, getattr(value, "__func__", None), getattr(value, "func", None)):
            if type(inner) is types.FunctionType and inner not in found.setdefault(name, []):
                found[name].append(inner)
        if type(value) is property:
            for accessor in (value.fget, value.fset, value.fdel):
                if type(accessor) is types.FunctionType and accessor not in found.setdefault(name, []):
                    found[name].append(accessor)

    for module in list(sys.modules.values()):
        path = str(getattr(module, "__file__", None) or "").replace("\\", "/")
        if not path.endswith(tuple(files)):
            continue
        for name, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != module.__name__:
                continue
            add(name, value)
            if isinstance(value, type):
                for member, inner in vars(value).items():
                    add(member, inner)
    return found


def disable(references, forbidden):
    """Make each function of ``references`` (see ``reference_functions``) named in ``forbidden`` raise RuntimeError
    when called, by anyone, under any name, in any thread, until ``restore()``: returns ``(called, restore)``, where
    ``called`` is the set of the names called meanwhile. The function objects themselves change (their code), so
    every alias, bound method, wrapper or thread that reaches one reaches the disabled one."""
    called = set()
    saved = []

    def stub_code(name, free):
        # A function's code can only be swapped for code of as many free variables (CPython's func_set_code).
        names = [f"v{index}" for index in range(len(free))]
        body = "".join(f"    {variable} = None\n" for variable in names)
        uses = "".join(f"        {variable}\n" for variable in names)
        source = (
            f"def outer():\n{body}    def stub(*args, _grading_called=None, **kwargs):\n{uses}"
            f"        _grading_called.add({name!r})\n"
            f"        raise RuntimeError({name!r} + ' is a reference function this answer may not call')\n"
            "    return stub\n"
        )
        scope = {}
        exec(source, {"__builtins__": __builtins__}, scope)
        return scope["outer"]().__code__

    for name in sorted(forbidden):
        for function in references.get(name, ()):
            saved.append((function, function.__code__, function.__kwdefaults__))
            function.__code__ = stub_code(name, function.__code__.co_freevars)
            function.__kwdefaults__ = {"_grading_called": called}

    def restore():
        for function, code, kwdefaults in reversed(saved):
            function.__code__ = code
            function.__kwdefaults__ = kwdefaults

    return called, restore


def calling(function, *args, forbidden, files, **kwargs):
    """``(function(*args, **kwargs), called)``, with the functions named in ``forbidden`` and defined in one of
    ``files`` (a tuple of path endings, e.g. ``("course_lib/collectives.py",)``) disabled during the call (see
    ``disable``): each raises RuntimeError, whoever calls it (course_lib's own functions too), and ``called`` holds
    the names of those called; an answer that raised after calling one returns None. When the
    grader runs a test, ``function`` is its proxy of the answer (tools/grading_verifier.py), and the worker in the
    sandbox, where the answer runs, disables them the same way, on the functions it found before the notebook ran.

    >>> from course_lib import collectives
    >>> def answer(ranks):
    ...     return collectives.ring_allreduce_time(ranks, 1e9, 50e9, 5e-6)
    >>> calling(answer, 8, forbidden={"ring_allreduce_time"}, files=("course_lib/collectives.py",))
    (None, {'ring_allreduce_time'})
    """
    watched_remotely = getattr(function, "call_watched", None)
    if watched_remotely is not None:
        return watched_remotely(args, kwargs, forbidden, files)
    called, restore = disable(reference_functions(files), forbidden)
    try:
        result = function(*args, **kwargs)
    except Exception:
        if not called:
            raise
        result = None  # what a disabled function raised: the test says which one was called
    finally:
        restore()
    return result, called


def raises_value_error(function, *args):
    """Whether ``function(*args)`` raises ValueError (any other exception propagates)."""
    try:
        function(*args)
    except ValueError:
        return True
    return False
