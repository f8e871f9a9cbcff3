"""The AST rewrite behind AutoGraph: ``if`` / ``while`` / ``for`` (with ``break``, ``continue``
and ``return`` inside them) become calls of the runtime operators in ``operators`` (``ag__``).

Pipeline, per function (the decorated one and each ``def`` nested in it):

1. *Jump lowering*: ``return`` inside control flow becomes ``do_return = True; retval_ = ...``
   (the function ends with ``return ag__.retval(retval_)``); ``break`` / ``continue`` become
   flags.  Statements after a jump move into the branch that did not jump, or are guarded by
   ``if ag__.not_any(flags):``; loops stop through their condition (``while``) or an extra test
   (``for``).
2. *Analysis*, on the lowered tree: for each statement the names it modifies, the names live
   after it (read anywhere else in the function, or anywhere in it when it sits in a loop), and
   for loops the names read before being assigned in an iteration.
3. *Conversion*, innermost first: an ``if`` becomes two branch functions taking the modified
   variables' values and returning the new values of the live ones, and
   ``(x, y) = ag__.if_stmt(test, if_true, if_false, ag__.ld(locals(), names), ...)``; loops
   become ``ag__.while_stmt`` / ``ag__.for_stmt`` over their loop-carried variables.

Before that, every call ``f(*args, **kwargs)`` in the function becomes
``ag__.converted_call(f, (*args,), {**kwargs})``, so that user functions it calls are converted
too when they run while tracing (see ``operators.converted_call``).
"""
import ast
import functools
import collections
import copy
import inspect
import textwrap
import types

from hybridtf.autograph import code_cache


AG = "ag__"


class ConversionError(Exception):
    """The function cannot be converted (e.g. its source is not available)."""


# ---- small AST builders -------------------------------------------------------------------------
def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name(AG), attr=attr, ctx=ast.Load())


def _call(func, args):
    return ast.Call(func=func, args=list(args), keywords=[])


def _const(value):
    return ast.Constant(value=value)


def _assign(name, value):
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def _strs(names):
    return ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())


def _names_tuple(names, store=False):
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store
                     else ast.Load())


def _lambda(body):
    return ast.Lambda(args=_arguments([]), body=body)


def _arguments(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _def(name, params, body):
    return ast.FunctionDef(name=name, args=_arguments(params), body=body or [ast.Pass()],
                           decorator_list=[], returns=None, type_params=[])


def _not_any(flags):
    return _call(_ag("not_any"), [_name(f) for f in flags])


# ---- name analysis ------------------------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _assigned(nodes):
    """Names bound by ``nodes`` in their own scope (not inside nested functions / classes /
    comprehensions, but a nested ``def``'s own name counts)."""
    out = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            return
        if isinstance(node, (ast.Lambda,) + _COMPREHENSIONS):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)
    for n in nodes:
        visit(n)
    return out


def _loads(nodes):
    """Counter of names read anywhere in ``nodes`` (nested functions included: closures)."""
    out = collections.Counter()
    for n in nodes:
        for node in ast.walk(n):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                out[node.id] += 1
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out[node.target.id] += 1
    return out


def _exposed(stmts, defined):
    """(names read before being assigned in ``stmts``, names definitely assigned after)."""
    exposed = set()
    defined = set(defined)
    for s in stmts:
        if isinstance(s, ast.If):
            exposed |= set(_loads([s.test])) - defined
            e1, d1 = _exposed(s.body, defined)
            e2, d2 = _exposed(s.orelse, defined)
            exposed |= e1 | e2
            defined = d1 & d2
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            if s.value is not None:
                exposed |= set(_loads([s.value])) - defined
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            exposed |= set(_loads(targets)) - defined   # subscripts / attributes read
            defined |= _assigned([s])
        elif isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            exposed |= set(_loads([s])) - defined
            defined.add(s.name)
        elif isinstance(s, ast.With):
            # ``with f() as name:`` binds ``name`` before its body, which always runs.
            for item in s.items:
                exposed |= set(_loads([item.context_expr])) - defined
                if item.optional_vars is not None:
                    exposed |= set(_loads([item.optional_vars])) - defined
                    defined |= _assigned([ast.Assign(targets=[item.optional_vars],
                                                     value=ast.Constant(value=None))])
            body_exposed, defined = _exposed(s.body, defined)
            exposed |= body_exposed
        elif isinstance(s, (ast.For, ast.While)):
            # A nested loop's target is bound before each run of its body; the loop may run
            # no time, so what it assigns is not definitely assigned after it.
            head = [s.iter, s.target] if isinstance(s, ast.For) else [s.test]
            exposed |= set(_loads(head)) - defined
            target = _assigned([ast.Assign(targets=[s.target], value=ast.Constant(value=None))]) \
                if isinstance(s, ast.For) else set()
            exposed |= _exposed(s.body, defined | target)[0] | _exposed(s.orelse, defined)[0]
        else:
            exposed |= set(_loads([s])) - defined
            if not isinstance(s, (ast.While, ast.For, ast.Try, ast.With)):
                defined |= _assigned([s])
    return exposed, defined


def _walk_scope(stmts):
    """The nodes of ``stmts`` in their own scope (not inside nested functions or classes)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _contains(stmts, kinds, into_loops):
    def visit(node):
        if isinstance(node, kinds):
            return True
        if isinstance(node, _SCOPES):
            return False
        if not into_loops and isinstance(node, (ast.While, ast.For)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))
    return any(visit(s) for s in stmts)


def _has_return(stmts):
    return _contains(stmts, ast.Return, True)


def _always_jumps(block):
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Break, ast.Continue)):
        return True
    if isinstance(last, ast.If):
        return _always_jumps(last.body) and _always_jumps(last.orelse)
    return False


# ---- the function converter -------------------------------------------------------------------
class _FunctionConverter:
    def __init__(self, counter):
        self.counter = counter      # shared itertools-like [int] for unique names
        self.generated = set()

    def fresh(self, base, function=True):
        self.counter[0] += 1
        name = f"{base}__{self.counter[0]}"
        if function:    # generated functions are not variables of the converted code
            self.generated.add(name)
        return name

    # ---- 1. jump lowering --------------------------------------------------------------------
    def lower(self, fdef):
        body = fdef.body
        self.returns = any(_has_return([s]) for s in body
                           if not isinstance(s, ast.Return))
        self.declared = set()
        self.globals, self.nonlocals = set(), set()
        for node in _walk_scope(fdef.body):
            if isinstance(node, ast.Global):
                self.globals |= set(node.names)
            elif isinstance(node, ast.Nonlocal):
                self.nonlocals |= set(node.names)
        self.declared = self.globals | self.nonlocals
        new = self.lower_block(body, None)
        if self.returns:
            docstring = []
            if new and isinstance(new[0], ast.Expr) and isinstance(new[0].value, ast.Constant) \
                    and isinstance(new[0].value.value, str):
                docstring = [new.pop(0)]
            new = docstring + [
                _assign("do_return", _const(False)),
                _assign("retval_", _call(_ag("UndefinedReturnValue"), [])),
            ] + new + [ast.Return(value=_call(_ag("retval"), [_name("retval_")]))]
        fdef.body = new or [ast.Pass()]

    def _jump_flags(self, s, ctx):
        flags = []
        if self.returns and _has_return([s]):
            flags.append("do_return")
        if ctx is not None:
            brk, cont = ctx
            if brk and _contains([s], ast.Break, False):
                flags.append(brk)
            if cont and _contains([s], ast.Continue, False):
                flags.append(cont)
        return flags

    def lower_block(self, stmts, ctx):
        out = []
        for idx, s in enumerate(stmts):
            rest = stmts[idx + 1:]
            if isinstance(s, ast.Return):
                if not self.returns:
                    out.append(s)
                    return out
                out.append(_assign("do_return", _const(True)))
                out.append(_assign("retval_", s.value if s.value is not None else _const(None)))
                return out
            if isinstance(s, ast.Break):
                out.append(_assign(ctx[0], _const(True)))
                return out
            if isinstance(s, ast.Continue):
                out.append(_assign(ctx[1], _const(True)))
                return out
            if isinstance(s, ast.If) and self._jump_flags(s, ctx):
                body = s.body if _always_jumps(s.body) else s.body + rest
                orelse = s.orelse if _always_jumps(s.orelse) else \
                    s.orelse + copy.deepcopy(rest)
                out.append(ast.If(test=s.test, body=self.lower_block(body, ctx) or [ast.Pass()],
                                  orelse=self.lower_block(orelse, ctx)))
                return out
            if isinstance(s, (ast.While, ast.For)):
                out += self.lower_loop(s, ctx)
            elif isinstance(s, (ast.With, ast.Try)):
                s = copy.copy(s)
                s.body = self.lower_block(s.body, ctx)
                if isinstance(s, ast.Try):
                    s.orelse = self.lower_block(s.orelse, ctx)
                    s.finalbody = self.lower_block(s.finalbody, ctx)
                    for h in s.handlers:
                        h.body = self.lower_block(h.body, ctx)
                out.append(s)
            else:
                out.append(s)
                continue
            flags = self._jump_flags(s, ctx)
            if flags and rest:
                out.append(ast.If(test=_not_any(flags), body=self.lower_block(rest, ctx),
                                  orelse=[]))
                return out
        return out

    def lower_loop(self, s, ctx):
        brk = self.fresh("break", False) if _contains(s.body, ast.Break, False) else None
        cont = self.fresh("continue", False) if _contains(s.body, ast.Continue, False) else None
        body = ([_assign(cont, _const(False))] if cont else []) + \
            self.lower_block(s.body, (brk, cont))
        stop = ([brk] if brk else []) + \
            (["do_return"] if self.returns and _has_return(s.body) else [])
        pre = [_assign(brk, _const(False))] if brk else []
        if isinstance(s, ast.While):
            test = s.test
            if stop:
                test = _call(_ag("and_"), [_lambda(_not_any(stop)), _lambda(test)])
            loop = ast.While(test=test, body=body or [ast.Pass()], orelse=[])
        else:
            loop = ast.For(target=s.target, iter=s.iter, body=body or [ast.Pass()], orelse=[])
            loop._ag_extra = _not_any(stop) if stop else None
        post = []
        if s.orelse:
            orelse = self.lower_block(s.orelse, ctx)
            post = [ast.If(test=_not_any(stop), body=orelse, orelse=[])] if stop else orelse
        return pre + [loop] + post

    # ---- 2. analysis ------------------------------------------------------------------------
    def analyse(self, fdef):
        # A loop's extra test (``not_any(break__1)``) is kept beside the tree: its reads make
        # the break flags live in the statements that set them.
        extras = [node._ag_extra for node in _walk_scope(fdef.body)
                  if getattr(node, "_ag_extra", None) is not None]
        self.all_loads = _loads(fdef.body + extras)
        self._annotate(fdef.body, False)

    def _modified(self, stmts):
        return {n for n in _assigned(stmts)
                if n not in self.generated and n not in self.declared}

    def _annotate(self, stmts, in_loop):
        for s in stmts:
            if isinstance(s, (ast.If, ast.While, ast.For)):
                extra = getattr(s, "_ag_extra", None)
                inner = _loads([s] + ([extra] if extra is not None else []))
                live = {n for n, c in self.all_loads.items() if c - inner.get(n, 0) > 0}
                if in_loop:
                    live |= set(inner)
                s._ag_live = live
                if isinstance(s, ast.If):
                    s._ag_body_assigned = self._modified(s.body)
                    s._ag_orelse_assigned = self._modified(s.orelse)
                    s._ag_modified = s._ag_body_assigned | s._ag_orelse_assigned
                    self._annotate(s.body, in_loop)
                    self._annotate(s.orelse, in_loop)
                else:
                    if isinstance(s, ast.While):
                        s._ag_modified = self._modified(s.body)
                        exposed, _ = _exposed([ast.Expr(value=s.test)] + s.body, set())
                    else:
                        target = self._modified([ast.Assign(targets=[s.target],
                                                            value=_const(None))])
                        s._ag_modified = self._modified(s.body) | target
                        exposed, _ = _exposed(s.body, target)
                        if extra is not None:
                            exposed |= set(_loads([extra]))
                    s._ag_exposed = exposed
                    self._annotate(s.body, True)
            elif isinstance(s, ast.With):
                self._annotate(s.body, in_loop)
            elif isinstance(s, ast.Try):
                for block in [s.body, s.orelse, s.finalbody] + [h.body for h in s.handlers]:
                    self._annotate(block, in_loop)


class _ControlFlowTransformer(ast.NodeTransformer):
    """Step 3: innermost first, control flow statements become operator calls."""

    def __init__(self, fc):
        self.fc = fc

    def _def(self, name, params, body):
        """A generated function; it shares the converted function's global / nonlocal names."""
        decls = []
        if self.fc.globals:
            decls.append(ast.Global(names=sorted(self.fc.globals)))
        if self.fc.nonlocals:
            decls.append(ast.Nonlocal(names=sorted(self.fc.nonlocals)))
        return _def(name, params, decls + body)

    def visit_FunctionDef(self, node):
        # A nested (user) function: converted on its own, in its own scope.
        return _convert_function_def(node, self.fc.counter, top=False)

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def _assign_result(self, outputs, call):
        if not outputs:
            return ast.Expr(value=call)
        return ast.Assign(targets=[_names_tuple(outputs, store=True)], value=call)

    def _ld(self, names):
        return _call(_ag("ld"), [_call(_name("locals"), []), _strs(names)])

    def visit_If(self, node):
        live = node._ag_live
        modified = node._ag_modified
        self.generic_visit(node)
        outputs = sorted(modified & live)
        params = outputs + sorted(modified - live)
        ret = ast.Return(value=_names_tuple(outputs))
        true_name = self.fc.fresh("if_true")
        false_name = true_name.replace("if_true", "if_false")
        self.fc.generated.add(false_name)
        true_fn = self._def(true_name, params, list(node.body) + [ret])
        false_fn = self._def(false_name, params, list(node.orelse) + [copy.deepcopy(ret)])
        call = _call(_ag("if_stmt"), [
            node.test, _name(true_name), _name(false_name), self._ld(params), _strs(outputs),
            _strs(sorted(node._ag_body_assigned)), _strs(sorted(node._ag_orelse_assigned))])
        return [true_fn, false_fn, self._assign_result(outputs, call)]

    def _loop_vars(self, node):
        modified = node._ag_modified
        return sorted(modified & (node._ag_exposed | node._ag_live))

    def visit_While(self, node):
        loop_vars = self._loop_vars(node)
        exposed = sorted(set(loop_vars) & node._ag_exposed)
        self.generic_visit(node)
        test_name = self.fc.fresh("loop_test")
        body_name = test_name.replace("loop_test", "loop_body")
        self.fc.generated.add(body_name)
        test_fn = self._def(test_name, loop_vars, [ast.Return(value=node.test)])
        body_fn = self._def(body_name, loop_vars, list(node.body) +
                            [ast.Return(value=_names_tuple(loop_vars))])
        call = _call(_ag("while_stmt"), [_name(test_name), _name(body_name),
                                         self._ld(loop_vars), _strs(loop_vars), _strs(exposed)])
        return [test_fn, body_fn, self._assign_result(loop_vars, call)]

    def visit_For(self, node):
        loop_vars = self._loop_vars(node)
        exposed = sorted(set(loop_vars) & node._ag_exposed)
        extra = node._ag_extra if hasattr(node, "_ag_extra") else None
        self.generic_visit(node)
        body_name = self.fc.fresh("loop_body")
        itr = body_name.replace("loop_body", "itr")
        out = []
        body_fn = self._def(body_name, [itr] + loop_vars,
                            [ast.Assign(targets=[node.target], value=_name(itr))]
                            + list(node.body) + [ast.Return(value=_names_tuple(loop_vars))])
        out.append(body_fn)
        if extra is not None:
            extra_name = body_name.replace("loop_body", "extra_test")
            self.fc.generated.add(extra_name)
            out.append(self._def(extra_name, loop_vars, [ast.Return(value=extra)]))
            extra_ref = _name(extra_name)
        else:
            extra_ref = _const(None)
        iterable = node.iter
        if isinstance(iterable, ast.Call):
            iterable = ast.Call(func=_ag("iter_call"), args=[iterable.func] + iterable.args,
                                keywords=iterable.keywords)
        iterate = node.target.id if isinstance(node.target, ast.Name) else None
        call = _call(_ag("for_stmt"), [iterable, extra_ref, _name(body_name),
                                       self._ld(loop_vars), _strs(loop_vars), _strs(exposed),
                                       _const(iterate)])
        out.append(self._assign_result(loop_vars, call))
        return out


# Calls that must stay direct: they read or change the calling frame.
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


class _CallConverter(ast.NodeTransformer):
    """``f(a, *b, k=c, **d)`` -> ``ag__.converted_call(f, (a, *b), {'k': c, **d})``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == AG:
            return node
        args = ast.Tuple(elts=list(node.args), ctx=ast.Load())
        kwargs = ast.Dict(keys=[_const(k.arg) if k.arg is not None else None
                                for k in node.keywords],
                          values=[k.value for k in node.keywords])
        converted = ast.copy_location(_call(_ag("converted_call"), [func, args, kwargs]), node)
        converted.original_call = node
        return converted

    def visit_For(self, node):
        # ``for x in tf.range(n)`` keeps its call: ``for_stmt`` turns a symbolic range into a
        # loop counter instead of calling it.
        self.generic_visit(node)
        node.iter = getattr(node.iter, "original_call", node.iter)
        return node


def _convert_function_def(fdef, counter, top):
    if top:
        fdef.body = [_CallConverter().visit(s) for s in fdef.body]
    fc = _FunctionConverter(counter)
    fc.lower(fdef)
    fc.analyse(fdef)
    transformer = _ControlFlowTransformer(fc)
    new_body = []
    for s in fdef.body:
        r = transformer.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    fdef.body = new_body
    return fdef


# ---- entry points -------------------------------------------------------------------------------
def _source(fn):
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError) as err:
        raise ConversionError(f"the source of {fn!r} is not available: {err}") from None
    return textwrap.dedent(source)


def _function_ast(fn, source=None):
    source = _source(fn) if source is None else source
    try:
        module = ast.parse(source)
    except SyntaxError as err:
        raise ConversionError(f"cannot parse the source of {fn!r}: {err}") from None
    if not module.body or not isinstance(module.body[0], ast.FunctionDef):
        raise ConversionError(f"{fn!r} is not defined by a `def` statement (e.g. a lambda).")
    fdef = module.body[0]
    if fdef.name != fn.__name__:
        raise ConversionError(f"the source found for {fn!r} defines {fdef.name!r}.")
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _walk_scope(fdef.body)):
        raise ConversionError(f"{fn!r} is a generator; generators are not converted.")
    fdef.decorator_list = []
    return fdef


def convert_to_ast(fn, source=None):
    """The converted ``def`` of ``fn`` (named ``tf__<name>``); ``source``: its dedented source,
    when read already."""
    fdef = _function_ast(fn, source)
    _convert_function_def(fdef, [0], top=True)
    fdef.name = f"tf__{fdef.name}"
    return fdef


def _unwrap(fn):
    fn = getattr(fn, "python_function", fn)
    if isinstance(fn, types.MethodType):
        return fn.__func__, fn.__self__
    return fn, None


def to_code(fn):
    """The source of ``fn`` as AutoGraph converts it."""
    fn, _ = _unwrap(fn)
    if hasattr(fn, "func") and not isinstance(fn, types.FunctionType):
        fn = fn.func   # functools.partial
    return ast.unparse(ast.fix_missing_locations(convert_to_ast(fn))) + "\n"


def _converted_code(fn):
    """The code of ``fn`` converted -- a function ``tf__<name>`` whose free variables are
    ``ag__`` and ``fn``'s -- and its source: from ``code_cache`` when this source was converted
    before (in this process or an earlier one)."""
    source = _source(fn)
    freevars = list(fn.__code__.co_freevars)
    filename = f"<autograph {getattr(fn, '__qualname__', fn.__name__)}>"
    entry = code_cache.key(source, fn.__name__, freevars, filename)
    found = code_cache.load(entry)
    if found is not None:
        return found
    fdef = convert_to_ast(fn, source)
    factory = _def("__ag_factory", [AG] + freevars, [fdef, ast.Return(value=_name(fdef.name))])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    converted_source = ast.unparse(fdef)
    code_cache.store(entry, inner, converted_source)
    return inner, converted_source


def convert(fn, runtime):
    """The converted function: same globals, defaults and closure (cells shared); its ``ag__``
    is ``runtime``, the module of runtime operators the converted code calls (``operators``,
    which passes itself: it converts the functions it calls, so this module cannot import it)."""
    if isinstance(fn, functools.partial):
        return functools.partial(convert(fn.func, runtime), *fn.args, **fn.keywords)
    fn, instance = _unwrap(fn)
    if not isinstance(fn, types.FunctionType):
        raise ConversionError(f"{fn!r} is not a Python function.")
    inner, converted_source = _converted_code(fn)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else types.CellType(runtime)
                    for n in inner.co_freevars)
    for n in inner.co_freevars:
        if n not in cells and n != AG:
            raise ConversionError(f"unexpected free variable {n!r} in the converted code.")
    converted = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    converted.__kwdefaults__ = fn.__kwdefaults__
    converted.__dict__.update(fn.__dict__)
    converted.__doc__ = fn.__doc__
    converted.__qualname__ = fn.__qualname__
    converted.__module__ = fn.__module__
    converted.__wrapped__ = fn
    converted.ag_source = converted_source
    if instance is not None:
        return types.MethodType(converted, instance)
    return converted
