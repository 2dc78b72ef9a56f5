(** Definitions shared by the theorems: docs/spec.md §1 (Maxout networks, Transformers with
    residual feed-forward and attention blocks, hardmax with ties shared equally, softmax(λ))
    and §2 (the token-shift construction, a function of a net and its shift constants).
    Weights are rationals ([Q], so the construction computes, see Link.v); evaluation is over
    Coq's real numbers [R]. Vectors and matrices are functions of their indices; their sizes are
    carried beside them and every sum ranges over an explicit size. *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith.
Import ListNotations.
Open Scope R_scope.

(** * Finite sums and maxima *)

(** [rsum n f] = Σ_{i<n} f i. *)
Fixpoint rsum (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S n => rsum n f + f n end.

(** [rmax n f] = max_{i≤n} f i (n+1 entries). *)
Fixpoint rmax (n : nat) (f : nat -> R) : R :=
  match n with O => f O | S n => Rmax (rmax n f) (f (S n)) end.

(** [vmax T f] = max_{j<T} f j; T ≥ 1 in every use (0 for T = 0). *)
Definition vmax (T : nat) (f : nat -> R) : R :=
  match T with O => 0 | S n => rmax n f end.

Definition relu (x : R) : R := Rmax x 0.

(** [dot n a x] = Σ_{c<n} a_c x_c with rational weights a. *)
Definition dot (n : nat) (a : nat -> Q) (x : nat -> R) : R := rsum n (fun c => Q2R (a c) * x c).

(** * Maxout networks (spec §1) *)

(** A layer: [units] units, unit i has [rank i] ≥ 1 pieces [wt i j · h + bs i j]. *)
Record layer := {
  units : nat;
  rank : nat -> nat;
  wt : nat -> nat -> nat -> Q;   (* unit, piece, input coordinate *)
  bs : nat -> nat -> Q }.        (* unit, piece *)

Record maxout := {
  input_dim : nat;
  layers : list layer;
  outputs : nat;
  rd_w : nat -> nat -> Q;        (* output, coordinate of h^L *)
  rd_b : nat -> Q }.

(** The affine piece a_ij(h) of a layer whose input has [nin] coordinates. *)
Definition piece (L : layer) (nin : nat) (h : nat -> R) (i j : nat) : R :=
  dot nin (wt L i j) h + Q2R (bs L i j).

Definition layer_eval (L : layer) (nin : nat) (h : nat -> R) : nat -> R :=
  fun i => vmax (rank L i) (piece L nin h i).

(** h^L from h^0 = [h] of width [nin]. *)
Fixpoint layers_eval (ls : list layer) (nin : nat) (h : nat -> R) : nat -> R :=
  match ls with
  | [] => h
  | L :: ls => layers_eval ls (units L) (layer_eval L nin h)
  end.

(** Widths n_0, n_1, …, n_L and the last one. *)
Definition widths (M : maxout) : list nat := input_dim M :: map units (layers M).
Definition last_width (M : maxout) : nat := last (widths M) O.

Definition maxout_eval (M : maxout) (x : nat -> R) : nat -> R :=
  fun o => dot (last_width M) (rd_w M o) (layers_eval (layers M) (input_dim M) x) + Q2R (rd_b M o).

(** * Transformers (spec §1) *)

(** Residual feed-forward block: X' = X + W2 ReLU(W1 X + b1) + b2, per token. *)
Record ffb := {
  hid : nat;
  w1 : nat -> nat -> Q;   (* hidden, coordinate *)
  b1 : nat -> Q;
  w2 : nat -> nat -> Q;   (* coordinate, hidden *)
  b2 : nat -> Q }.

(** An attention head: query and key maps of [hq] rows, value of [hv] rows, output w × hv. *)
Record head := {
  hq : nat;
  hv : nat;
  qm : nat -> nat -> Q;
  km : nat -> nat -> Q;
  vm : nat -> nat -> Q;
  om : nat -> nat -> Q }.

Inductive block := FF (f : ffb) | ATT (hs : list head).

Record transformer := {
  tokens : nat;
  width : nat;
  tin : nat;                       (* input dimension d *)
  emb_w : nat -> nat -> Q;         (* coordinate, input *)
  emb_b : nat -> nat -> Q;         (* token, coordinate: the positional part P[t] *)
  blocks : list block;
  out_token : nat;
  touts : nat;
  ro_w : nat -> nat -> Q;          (* output, coordinate *)
  ro_b : nat -> Q }.

(** A state: [X t r] is coordinate r of token t. *)
Definition state := nat -> nat -> R.

(** An attention rule maps T and the scores of one query over tokens j to weights over j. *)
Definition rule := nat -> (nat -> R) -> nat -> R.

(** Hardmax: weight 1/|argmax| on every maximal score, 0 elsewhere (ties shared equally). *)
Definition hardmax : rule := fun T s =>
  let m := vmax T s in
  let cnt := rsum T (fun j => if Req_EM_T (s j) m then 1 else 0) in
  fun j => if Req_EM_T (s j) m then / cnt else 0.

(** Softmax (inverse temperature folded into the scores) and softmax(λ). *)
Definition softmax : rule := fun T s j => exp (s j) / rsum T (fun k => exp (s k)).
Definition softmax_l (lam : R) : rule := fun T s => softmax T (fun j => lam * s j).

Definition ff_eval (w : nat) (f : ffb) (X : state) : state :=
  fun t r => X t r + rsum (hid f) (fun k => Q2R (w2 f r k) * relu (dot w (w1 f k) (X t) + Q2R (b1 f k)))
             + Q2R (b2 f r).

Definition scores (w : nat) (hd : head) (X : state) (i : nat) : nat -> R :=
  fun j => rsum (hq hd) (fun a => dot w (qm hd a) (X i) * dot w (km hd a) (X j)).

Definition head_eval (rl : rule) (T w : nat) (hd : head) (X : state) : state :=
  fun i r => let A := rl T (scores w hd X i) in
    rsum (hv hd) (fun a => Q2R (om hd r a) * rsum T (fun j => A j * dot w (vm hd a) (X j))).

Definition att_eval (rl : rule) (T w : nat) (hs : list head) (X : state) : state :=
  fun i r => X i r + fold_right (fun hd acc => head_eval rl T w hd X i r + acc) 0 hs.

Definition block_eval (rl : rule) (T w : nat) (b : block) (X : state) : state :=
  match b with FF f => ff_eval w f X | ATT hs => att_eval rl T w hs X end.

Fixpoint blocks_eval (rl : rule) (T w : nat) (bs : list block) (X : state) : state :=
  match bs with [] => X | b :: bs => blocks_eval rl T w bs (block_eval rl T w b X) end.

Definition embed (tf : transformer) (x : nat -> R) : state :=
  fun t r => dot (tin tf) (emb_w tf r) x + Q2R (emb_b tf t r).

Definition tf_eval (rl : rule) (tf : transformer) (x : nat -> R) : nat -> R :=
  let X := blocks_eval rl (tokens tf) (width tf) (blocks tf) (embed tf x) in
  fun o => dot (width tf) (ro_w tf o) (X (out_token tf)) + Q2R (ro_b tf o).

(** * The token-shift construction (spec §2) *)

Open Scope nat_scope.

(** T = the largest rank, N = the largest width. *)
Definition layer_rank (L : layer) : nat := fold_right Nat.max 0 (map (rank L) (seq 0 (units L))).
Definition max_rank (M : maxout) : nat := fold_right Nat.max 0 (map layer_rank (layers M)).
Definition max_width (M : maxout) : nat := fold_right Nat.max 0 (widths M).

(** The layout: const 0, shift c_j at 1+j, h_i at 1+T+i, z_i at 1+T+N+i, out_i at 1+T+2N+i. *)
Definition c_shift (j : nat) := 1 + j.
Definition c_h (T i : nat) := 1 + T + i.
Definition c_z (T N i : nat) := 1 + T + N + i.
Definition c_out (T N i : nat) := 1 + T + 2 * N + i.
Definition lwidth (T N : nat) := 1 + T + 3 * N.

(** Slot j of a unit of rank k uses piece min(j, k−1): ranks padded by the last piece. *)
Definition pad (k j : nat) := Nat.min j (k - 1).

Definition sgn (s : nat) : Q := if s =? 0 then 1%Q else (-1)%Q.
Definition qind (b : bool) : Q := if b then 1%Q else 0%Q.

(** Is c in the h block, and below [n]? *)
Definition in_h (T n c : nat) : bool := (1 + T <=? c) && (c <? 1 + T + n).

(** Pieces block of a layer with [nin] inputs and shifts [R i j]: hidden unit k = 2(iT + j) + s
    is ReLU(sgn(s)·a_ij(h) − R_ij c_j), written to z_i with sign sgn(s). *)
Definition pieces_ffb (T N nin : nat) (L : layer) (R : nat -> nat -> Q) : ffb :=
  {| hid := 2 * units L * T;
        w1 := fun k c => let p := k / 2 in let i := p / T in let j := p mod T in
              if c =? c_shift j then (- R i j)%Q
              else if in_h T nin c then (sgn (k mod 2) * wt L i (pad (rank L i) j) (c - (1 + T)))%Q
              else 0%Q;
        b1 := fun k => let p := k / 2 in let i := p / T in let j := p mod T in
              (sgn (k mod 2) * bs L i (pad (rank L i) j))%Q;
        w2 := fun r k => if r =? c_z T N (k / 2 / T) then sgn (k mod 2) else 0%Q;
        b2 := fun _ => 0%Q |}.

Definition pieces_block (T N nin : nat) (L : layer) (R : nat -> nat -> Q) : block :=
  FF (pieces_ffb T N nin L R).

(** Max block: head i has query = the constant, key = value = z_i, output into out_i. *)
Definition max_head (T N i : nat) : head :=
  {| hq := 1; hv := 1;
     qm := fun _ c => qind (c =? 0);
     km := fun _ c => qind (c =? c_z T N i);
     vm := fun _ c => qind (c =? c_z T N i);
     om := fun r _ => qind (r =? c_out T N i) |}.

Definition max_block (T N n : nat) : block := ATT (map (max_head T N) (seq 0 n)).

(** Advance block: identity pairs p < nin + 2n, hidden 2p + s reading src p with sign sgn(s):
    h_i (i < nin) writes −h_i; out_i writes +h_i, −out_i; z_i writes −z_i. *)
Definition adv_src (T N nin n p : nat) : nat :=
  if p <? nin then c_h T p else if p <? nin + n then c_out T N (p - nin) else c_z T N (p - nin - n).

Definition adv_write (T N nin n p r : nat) : Q :=
  if p <? nin then (if r =? c_h T p then (-1)%Q else 0%Q)
  else if p <? nin + n then
    (if r =? c_h T (p - nin) then 1%Q else if r =? c_out T N (p - nin) then (-1)%Q else 0%Q)
  else (if r =? c_z T N (p - nin - n) then (-1)%Q else 0%Q).

Definition advance_block (T N nin n : nat) : block :=
  FF {| hid := 2 * (nin + 2 * n);
        w1 := fun k c => if c =? adv_src T N nin n (k / 2) then sgn (k mod 2) else 0%Q;
        b1 := fun _ => 0%Q;
        w2 := fun r k => (sgn (k mod 2) * adv_write T N nin n (k / 2) r)%Q;
        b2 := fun _ => 0%Q |}.

(** The shift constants: [Rs ℓ i j] for layer ℓ (0-based), unit i, slot j. *)
Definition shifts := nat -> nat -> nat -> Q.

Fixpoint layer_blocks (T N l nin : nat) (ls : list layer) (Rs : shifts) : list block :=
  match ls with
  | [] => []
  | L :: ls => pieces_block T N nin L (Rs l) :: max_block T N (units L) :: advance_block T N nin (units L)
               :: layer_blocks T N (S l) (units L) ls Rs
  end.

Definition construct (M : maxout) (Rs : shifts) : transformer :=
  let T := max_rank M in let N := max_width M in let d := input_dim M in
  {| tokens := T;
     width := lwidth T N;
     tin := d;
     emb_w := fun r i => qind (r =? c_h T i);
     emb_b := fun t r => if r =? 0 then 1%Q
                         else if r <=? T then qind (negb (r - 1 =? t)) else 0%Q;
     blocks := layer_blocks T N 0 d (layers M) Rs;
     out_token := 0;
     touts := outputs M;
     ro_w := fun o c => if in_h T (last_width M) c then rd_w M o (c - (1 + T)) else 0%Q;
     ro_b := rd_b M |}.
