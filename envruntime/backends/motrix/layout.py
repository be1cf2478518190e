"""Column maps between MuJoCo's state/sensor layout and MotrixSim's, built once per model.

MotrixSim orders DoF positions as ``[floating bases..., joints...]`` with scalar-last (xyzw)
quaternions, and orders sensors by its own model order. The backend reads everything with one
query program whose buffer holds ``[dof_pos | dof_vel | sensor_0 | sensor_1 | ...]`` (sensors
queried by name in MuJoCo's order), so MuJoCo's ``qpos``, ``qvel`` and ``sensordata`` are plain
column gathers of that buffer: the index arrays here, with the quaternion reorder folded in.
"""

from __future__ import annotations

from dataclasses import dataclass

import motrixsim
import mujoco
import numpy as np
from motrixsim import query

# [x, y, z, w] -> [w, x, y, z]: where each scalar-first component sits in a scalar-last quaternion.
XYZW_TO_WXYZ = np.array([3, 0, 1, 2], dtype=np.int64)
# ints: ``np.int32 in (enum, ...)`` is False in MuJoCo 4's bindings, so compare plain ints
_QUAT_SENSORS = (int(mujoco.mjtSensor.mjSENS_FRAMEQUAT), int(mujoco.mjtSensor.mjSENS_BALLQUAT))


class LayoutError(ValueError):
    """The MJCF uses something the MotrixSim backend cannot map onto MuJoCo's layout."""


@dataclass(frozen=True)
class MotrixLayout:
    """Where MuJoCo's columns live in the backend's MotrixSim query buffer.

    ``qpos_cols[i]`` is the buffer column of MuJoCo ``qpos[:, i]`` (likewise ``qvel_cols``,
    ``sensor_cols``); ``dof_pos_cols``/``dof_vel_cols`` map MuJoCo columns to MotrixSim's own
    ``dof_pos``/``dof_vel`` arrays, which reset writes. ``acc_sensor_cols`` are the
    ``sensordata`` columns of acceleration-stage sensors (accelerometer, touch, ...);
    ``quat_qpos_cols`` (k, 4) the MuJoCo ``qpos`` columns of free/ball joint quaternions.
    """

    query_fields: dict[str, query.QuerySource]
    qpos_cols: np.ndarray
    qvel_cols: np.ndarray
    sensor_cols: np.ndarray
    dof_pos_cols: np.ndarray
    dof_vel_cols: np.ndarray
    acc_sensor_cols: np.ndarray
    quat_qpos_cols: np.ndarray
    free_base_body: int | None  # MotrixSim body index owning MuJoCo joint 0 if it is free

    @classmethod
    def build(cls, mj: mujoco.MjModel, mx: motrixsim.SceneModel) -> MotrixLayout:
        """Match joints and sensors by name and check sizes; raise ``LayoutError`` on mismatch."""
        if (mx.num_dof_pos, mx.num_dof_vel) != (mj.nq, mj.nv):
            raise LayoutError(f"MotrixSim sees {mx.num_dof_pos} dof positions / {mx.num_dof_vel} "
                              f"velocities, MuJoCo nq={mj.nq} nv={mj.nv}")
        dof_pos_cols, dof_vel_cols, free_base_body = _joint_maps(mj, mx)
        fields, sensor_offsets = _sensor_fields(mj)
        plan = _compile(mx, fields, _sensor_kinds(mj))
        offset = {f.name: f.offset for f in plan.fields}
        size = {f.name: f.size for f in plan.fields}
        sensor_cols = []
        for s, name in enumerate(sensor_offsets):
            dim = int(mj.sensor_dim[s])
            if size[name] != dim:
                raise LayoutError(f"sensor {name[len('sensor:'):]!r} has {size[name]} values in "
                                  f"MotrixSim but dimension {dim} in MuJoCo")
            cols = offset[name] + np.arange(dim)
            sensor_cols.append(cols[XYZW_TO_WXYZ] if int(mj.sensor_type[s]) in _QUAT_SENSORS else cols)
        acc = [np.arange(mj.sensor_adr[s], mj.sensor_adr[s] + mj.sensor_dim[s])
               for s in range(mj.nsensor) if mj.sensor_needstage[s] == mujoco.mjtStage.mjSTAGE_ACC]
        return cls(
            query_fields=fields,
            qpos_cols=offset["dof_pos"] + dof_pos_cols,
            qvel_cols=offset["dof_vel"] + dof_vel_cols,
            sensor_cols=_concat(sensor_cols),
            dof_pos_cols=dof_pos_cols,
            dof_vel_cols=dof_vel_cols,
            acc_sensor_cols=_concat(acc),
            quat_qpos_cols=_quaternion_columns(mj),
            free_base_body=free_base_body,
        )


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _quaternion_columns(mj: mujoco.MjModel) -> np.ndarray:
    starts = [int(mj.jnt_qposadr[j]) + (3 if int(mj.jnt_type[j]) == mujoco.mjtJoint.mjJNT_FREE else 0)
              for j in range(mj.njnt)
              if int(mj.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL)]
    return (np.array(starts, dtype=np.int64)[:, None] + np.arange(4)).reshape(-1, 4)


def _joint_maps(mj: mujoco.MjModel, mx: motrixsim.SceneModel) -> tuple[np.ndarray, np.ndarray, int | None]:
    """MotrixSim dof_pos/dof_vel column of every MuJoCo qpos/qvel column."""
    pos = np.full(mj.nq, -1, dtype=np.int64)
    vel = np.full(mj.nv, -1, dtype=np.int64)
    bases = list(mx.floating_bases)
    free_base_body = None
    for j in range(mj.njnt):
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, j)
        qadr, vadr = int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
        kind = int(mj.jnt_type[j])
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            base = _pop_base(bases, name)
            # translation as is, quaternion xyzw -> wxyz; velocity [world lin, local ang] in both
            pos[qadr:qadr + 7] = np.array(base.dof_pos_indices)[np.r_[0:3, 3 + XYZW_TO_WXYZ]]
            vel[vadr:vadr + 6] = base.dof_vel_indices
            if j == 0:
                free_base_body = next(b.index for b in mx.bodies
                                      if b.floatingbase is not None and b.floatingbase.index == base.index)
            continue
        index = mx.get_joint_index(name) if name else None
        if index is None:
            raise LayoutError(f"MuJoCo joint {j} ({name!r}) has no MotrixSim counterpart; name every joint")
        start_p, start_v = mx.joint_dof_pos_indices[index], mx.joint_dof_vel_indices[index]
        if kind == mujoco.mjtJoint.mjJNT_BALL:
            pos[qadr:qadr + 4] = start_p + XYZW_TO_WXYZ
            vel[vadr:vadr + 3] = start_v + np.arange(3)
        else:
            pos[qadr], vel[vadr] = start_p, start_v
    if (pos < 0).any() or (vel < 0).any():
        raise LayoutError("some MuJoCo qpos/qvel columns map to no MotrixSim DoF")
    return pos, vel, free_base_body


def _pop_base(bases: list, name: str | None):
    """The MotrixSim floating base of a MuJoCo free joint: by name, else the next unnamed one."""
    for i, base in enumerate(bases):
        if base.name == name:
            return bases.pop(i)
    if bases:
        return bases.pop(0)
    raise LayoutError(f"MuJoCo free joint {name!r} has no MotrixSim floating base")


def _sensor_fields(mj: mujoco.MjModel) -> tuple[dict[str, query.QuerySource], list[str]]:
    """The query fields: dof_pos, dof_vel, then one field per sensor in MuJoCo order."""
    fields: dict[str, query.QuerySource] = {"dof_pos": query.DofPosition(), "dof_vel": query.DofVelocity()}
    names = []
    for s in range(mj.nsensor):
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SENSOR, s)
        if not name:
            raise LayoutError(f"sensor {s} has no name; the MotrixSim backend reads sensors by name")
        fields[f"sensor:{name}"] = query.SensorValues([name])
        names.append(f"sensor:{name}")
    return fields, names


def _sensor_kinds(mj: mujoco.MjModel) -> dict[str, str]:
    """Query field name -> MuJoCo sensor type name, for error messages."""
    return {f"sensor:{mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SENSOR, s)}":
            mujoco.mjtSensor(mj.sensor_type[s]).name for s in range(mj.nsensor)}


def _compile(mx: motrixsim.SceneModel, fields: dict[str, query.QuerySource],
             kinds: dict[str, str]) -> query.QueryPlan:
    """Compile ``fields``; if MotrixSim lacks sensors, one error naming all of them."""
    try:
        return mx.compile_query(fields)
    except ValueError as exc:
        missing = [f"{key[len('sensor:'):]!r} ({kinds[key]})" for key in fields
                   if key.startswith("sensor:") and not _compiles(mx, {key: fields[key]})]
        if not missing:
            raise
        raise LayoutError(f"MotrixSim 0.10.1 does not provide sensor(s) {', '.join(missing)}: "
                          "its MJCF loader ignores that sensor type") from exc


def _compiles(mx: motrixsim.SceneModel, fields: dict[str, query.QuerySource]) -> bool:
    try:
        mx.compile_query(fields)
    except ValueError:
        return False
    return True
