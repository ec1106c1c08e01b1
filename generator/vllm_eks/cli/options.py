"""Click options made from a pydantic model's fields, so each setting is defined once: the field's
description is the help, a Literal the choices, a bool an on/off pair, a list a repeatable flag,
and the field's bounds are checked by the model (a bad value is one line naming the flag, exit 1).
A field spelled differently on the command line says so in its metadata (`flag`, `aliases`)."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any, Literal, Union, get_args, get_origin

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _click_type(annotation: Any) -> Any:
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        # a Literal of numbers stays a number for the model to check (click would hand it a string)
        return click.Choice([str(v) for v in values]) if all(isinstance(v, str) for v in values) else type(values[0])
    if annotation in (int, float, str):
        return annotation
    return str


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def flag_name(name: str, info: FieldInfo) -> str:
    """The flag that sets field `name`: its metadata's `flag`, else the name with dashes."""
    return str(_extra(info).get("flag") or "--" + name.replace("_", "-"))


def option_for(name: str, info: FieldInfo) -> Callable:
    """One click option for one field; the parameter keeps the field's name."""
    extra = _extra(info)
    flag = flag_name(name, info)
    aliases = [str(a) for a in extra.get("aliases", ())]
    annotation = _strip_optional(info.annotation)
    kwargs: dict[str, Any] = {"help": info.description}
    if info.is_required():
        kwargs["required"] = True
    elif info.default is not None and info.default_factory is None and annotation is not bool:
        kwargs.update(default=info.default, show_default=True)
    if annotation is bool:
        return click.option(f"{flag}/--no-{flag[2:]}", name, default=bool(info.default), show_default=True,
                            help=info.description)
    if get_origin(annotation) is list:
        kwargs.update(multiple=True, type=_click_type(get_args(annotation)[0]))
    else:
        kwargs["type"] = _click_type(annotation)
    if "metavar" in extra:
        kwargs["metavar"] = extra["metavar"]
    return click.option(flag, *aliases, name, **kwargs)


def model_options(model: type[BaseModel], *, exclude: Iterable[str] = (),
                  order: Iterable[str] | None = None) -> Callable[[Callable], Callable]:
    """A decorator adding one option per field of `model` (in field order, or `order`), except
    `exclude`: the fields a command sets otherwise."""
    skip = set(exclude)
    names = [n for n in (order or model.model_fields) if n not in skip]

    def decorate(f: Callable) -> Callable:
        for name in reversed(names):
            f = option_for(name, model.model_fields[name])(f)
        return f

    return decorate


def model_kwargs(model: type[BaseModel], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The command's parameters that are fields of `model`."""
    return {k: v for k, v in kwargs.items() if k in model.model_fields}
